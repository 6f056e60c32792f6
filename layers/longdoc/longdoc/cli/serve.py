"""``longdoc serve [--host 127.0.0.1] [--port 8080]``: the API function served locally (see :mod:`longdoc.local.server`)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from longdoc.cli.common import int_at_least, statemachine_path
from longdoc.core.errors import CliError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from longdoc.local.server import BackgroundStarter, MachineStarter
    from longdoc.mcpserver.http import McpHttpMount
    from longdoc.wiring import Machine

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serve_marker(home: Path) -> Path:
    """``<home>/serve.json``: ``{"url", "pid"}`` of the ``longdoc serve`` running over ``home`` (removed on exit)."""
    return Path(home) / "serve.json"


def write_marker(marker: Path, url: str) -> None:
    """Record ``url`` and this process id in ``marker`` (best effort: an unwritable home only loses the hint)."""
    try:
        marker.write_text(json.dumps({"url": url, "pid": os.getpid()}), encoding="utf-8")
    except OSError:
        pass


def serve_url(home: Path) -> str | None:
    """The URL of the ``longdoc serve`` running over ``home``, or None when none is known to run
    (no marker, an unreadable one, or its process gone: ``os.kill(pid, 0)`` checks it exists)."""
    try:
        data = json.loads(serve_marker(home).read_text(encoding="utf-8"))
        os.kill(int(data["pid"]), 0)
        return str(data["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM handler: stop serving the way Ctrl-C does (workers stopped, the message printed)."""
    raise KeyboardInterrupt


def _machine_starters(home: Path) -> dict[Machine, MachineStarter]:
    """Local mode's starters of the summary and bulk state machines (workers on this machine), by machine."""
    from longdoc.cli.bulk import statemachine as bulk_machine
    from longdoc.cli.summarize import statemachine as summary_machine
    from longdoc.local.server import MachineStarter

    return {"summarize": MachineStarter("summarize", home, summary_machine()),
            "bulk": MachineStarter("bulk", home, bulk_machine())}


def local_starters(home: Path) -> tuple[BackgroundStarter, dict[Machine, MachineStarter]]:
    """Local mode's execution starters, as ``longdoc serve`` and ``longdoc mcp`` put them into
    :func:`longdoc.wiring.overrides`: one worker process per extraction run (its lease claimed
    first), and per summary or bulk execution."""
    from longdoc import wiring
    from longdoc.local.server import BackgroundStarter

    return BackgroundStarter(wiring.state_store(), home, statemachine_path()), _machine_starters(home)


def _mcp_mount(host: str) -> McpHttpMount:
    """The MCP streamable HTTP transport (:mod:`longdoc.mcpserver.http`), started, for ``/mcp``."""
    from longdoc.mcpserver.http import McpHttpMount

    mount = McpHttpMount(host=host)
    mount.start()
    return mount


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the API until interrupted; background runs still going are stopped (they show as STALE)."""
    from werkzeug.serving import make_server

    from longdoc import wiring
    from longdoc.config import get_settings
    from longdoc.local.lambda_runtime import load_handler
    from longdoc.local.api_event import RawHeadersHandler
    from longdoc.local.server import ApiApp

    settings = get_settings()
    api = load_handler("api")
    starter, machines = local_starters(settings.home)
    if args.host not in LOOPBACK:
        print(f"longdoc serve: WARNING: listening on {args.host}, not loopback: anyone who can reach this "
              "machine can start runs and read results (there is no IAM authorisation locally)", file=sys.stderr)
    mcp = _mcp_mount(args.host)
    try:
        server = make_server(args.host, args.port, ApiApp(api, max_body_bytes=args.max_body_bytes,
                                                          mounts={"/mcp": mcp}), threaded=True,
                             request_handler=RawHeadersHandler)  # repeated headers kept (local/api_event.py)
    except OSError as exc:  # port in use, address not on this machine, ...
        mcp.stop()
        raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"longdoc serve: http://{host}:{server.server_port}  (review /review, docs /docs, OpenAPI /openapi.json, MCP /mcp; "
          f"data in {settings.home})", flush=True)
    # Local mode's composition: the handlers ask wiring for their ExecutionStarters (Step Functions on
    # AWS); while serving, wiring answers local workers, and the previous composition is back on exit.
    previous = signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops it as Ctrl-C does
    marker = serve_marker(settings.home)
    write_marker(marker, f"http://{host}:{server.server_port}")
    try:
        with wiring.overrides(starters={"extract": starter, **machines}):
            server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        marker.unlink(missing_ok=True)
        server.server_close()
        mcp.stop()
        for machine in machines.values():
            machine.stop()
        stopped = starter.stop()
        if stopped:
            print(f"longdoc serve: stopped {stopped} running extraction(s); `longdoc runs --status STALE` lists "
                  "them and `longdoc runs resume RUN_ID` continues each", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``serve`` to the ``longdoc`` parser."""
    p = sub.add_parser("serve", help="serve the API locally (the API function's own handler)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback only)")
    p.add_argument("--port", type=int_at_least(0), default=8080, help="port (0: any free port)")
    p.add_argument("--max-body-bytes", type=int_at_least(1), default=10 * 1024 * 1024,
                   help="larger request bodies are answered 413 (default 10 MiB, API Gateway's quota)")
    p.set_defaults(func=cmd_serve)
