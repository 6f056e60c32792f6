"""``longdoc mcp``: longdoc's tools for Claude apps and agents, as a Model Context Protocol server on stdio.

The server is :func:`longdoc.mcpserver.server.build_server` (tools and resources in docs/mcp.md).
It reads and writes the same stores as the other commands: ``$LONGDOC_HOME`` locally, or with
AWS settings (``LONGDOC_MODE=aws``) the bucket, table and state machines the Lambdas use. Locally,
runs and summaries start in worker processes on this machine, as under ``longdoc serve``; they
are left running when the client closes the server, so a run started from one session can be
read from the next (``get_run``). The same server is mounted at ``/mcp`` on ``longdoc serve``.
"""

from __future__ import annotations

import argparse


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve MCP on stdin/stdout until the client closes it; returns 0."""
    from longdoc import wiring
    from longdoc.cli.serve import local_starters
    from longdoc.config import get_settings
    from longdoc.mcpserver.server import build_server

    settings = get_settings()
    server = build_server()
    if settings.mode != "local":  # Step Functions starters from the settings (wiring.execution_starter)
        server.run("stdio")
        return 0
    starter, machines = local_starters(settings.home)
    with wiring.overrides(starters={"extract": starter, **machines}):
        server.run("stdio")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``mcp`` to the ``longdoc`` parser."""
    p = sub.add_parser("mcp", help="serve longdoc's tools over the Model Context Protocol (stdio)")
    p.set_defaults(func=cmd_mcp)
