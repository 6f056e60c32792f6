"""Which file an MCP ``ingest`` reads: a path on the server's machine, checked before anything is read.

A relative path resolves against ``LONGDOC_MCP_ROOT`` when it is set, else against the server's
working directory (``longdoc mcp``'s is wherever the Claude app started it, often ``/``: give
absolute paths there). With ``LONGDOC_MCP_ROOT`` set, a path whose real location (symlinks
resolved, :meth:`pathlib.Path.resolve`) is outside the root's real location is refused, so a
client can read only the files under it; that matters most when ``longdoc serve --host`` makes
``/mcp`` reachable from other machines. Every refusal is a :class:`~longdoc.core.errors.IngestPathRefused`
naming the path as given and, when it differs, where it resolved.
"""

from __future__ import annotations

import stat
from pathlib import Path

from longdoc.core.errors import IngestPathRefused


def mcp_root() -> Path | None:
    """``LONGDOC_MCP_ROOT`` resolved (symlinks followed), or None when unset. Raises
    :class:`IngestPathRefused` when it is set but is not a directory (every ingest would be refused)."""
    from longdoc.config import McpSettings, function_settings

    root = function_settings(McpSettings).mcp_root
    if root is None:
        return None
    real = root.expanduser().resolve()
    if not real.is_dir():
        raise IngestPathRefused(f"LONGDOC_MCP_ROOT={root} is not a directory; the server refuses every ingest "
                                "until it names one")
    return real


def ingest_path(given: str) -> Path:
    """The regular file ``given`` names, absolute (see the module docstring for relative paths and the root).

    Raises :class:`IngestPathRefused`: outside ``LONGDOC_MCP_ROOT``, no such file, a directory, or
    not a regular file (a device such as ``/dev/zero``, a FIFO, a socket).
    """
    root = mcp_root()
    path = Path(given).expanduser()
    if not path.is_absolute():
        path = (root or Path.cwd()) / path
    real = path.resolve()
    shown = given if str(real) == given else f"{given} ({real})"
    if root is not None and not real.is_relative_to(root):
        raise IngestPathRefused(f"{shown}: outside LONGDOC_MCP_ROOT ({root}); this server ingests files under it only")
    try:
        mode = real.stat().st_mode
    except FileNotFoundError:
        raise IngestPathRefused(f"{shown}: no such file"
                                + ("" if path.is_absolute() and Path(given).is_absolute()
                                   else f" (relative paths resolve against {root or 'the server working directory'})")
                                ) from None
    except OSError as exc:
        raise IngestPathRefused(f"{shown}: cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise IngestPathRefused(f"{shown}: is a directory, not a file")
    if not stat.S_ISREG(mode):
        raise IngestPathRefused(f"{shown}: not a regular file (a device, FIFO or socket); ingest reads documents")
    return real
