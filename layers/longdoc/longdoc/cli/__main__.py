"""``python -m longdoc.cli ...``: the ``longdoc`` console script without the installed entry point
(what a Claude app's MCP configuration can run from a checkout: ``python -m longdoc.cli mcp``)."""

from longdoc.cli import main

raise SystemExit(main())
