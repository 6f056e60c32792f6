"""``longdoc admin ...``: one-off maintenance commands run with operator credentials.

``longdoc admin reindex-collections`` (issue 26): writes the collection index item of every
registered document whose latest READY version names a collection
(:func:`longdoc.triage.collections.reindex`). Documents ingested before the index existed are
otherwise found by triage only after their next ingest. It lists the registry (a DynamoDB Scan
with ``LONGDOC_MODE=aws``: run it from an operator's shell, the API role cannot scan) and is
idempotent. Prints ``{"documents", "indexed"}``.
"""

from __future__ import annotations

import argparse
import json


def _reindex(args: argparse.Namespace) -> int:
    from longdoc import wiring
    from longdoc.triage.collections import reindex

    print(json.dumps(reindex(wiring.state_store())))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``admin reindex-collections`` to the ``longdoc`` parser."""
    p = sub.add_parser("admin", help="one-off maintenance (operator credentials)")
    admin = p.add_subparsers(dest="admin_command", required=True)
    r = admin.add_parser("reindex-collections", help="index the collection of every registered document (backfill)")
    r.set_defaults(func=_reindex)
