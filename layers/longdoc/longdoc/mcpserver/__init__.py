"""longdoc as Model Context Protocol tools: ``longdoc mcp`` (stdio) and ``/mcp`` on ``longdoc serve``.

Built with the official ``mcp`` Python SDK (2.x, :class:`mcp.server.mcpserver.MCPServer`). The tools
call the same services as the CLI and the API over the same stores (:mod:`longdoc.wiring`): local
mode's home, or with AWS settings the adapters the Lambdas use. Modules:

- :mod:`~longdoc.mcpserver.args`: the tools' argument models (the API's and CLI's pydantic models where
  they exist) and the one rule turning a model into a tool signature;
- :mod:`~longdoc.mcpserver.tools`: one function per tool;
- :mod:`~longdoc.mcpserver.jobs`: work that may outlast a call (ingest, triage), run in the background;
- :mod:`~longdoc.mcpserver.server`: the server object, its one-line tool errors and the resources;
- :mod:`~longdoc.mcpserver.http`: the streamable HTTP transport as a WSGI mount for ``longdoc serve``.
"""
