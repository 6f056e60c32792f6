"""A document's type for accuracy strata: its metadata's when it has one, else a kind inferred from its name.

Order (first that gives one): the chunks' ``doc_type`` (document metadata: ``x-amz-meta-doc-type`` or
the ``<file>.metadata.json`` sidecar, copied onto each chunk), the registry entry's
``metadata.doc_type``, then :func:`infer_doc_type` on the document's path (its file name and folders).
An inferred type is recorded as such (``doc_type_inferred`` on the item and in the export), so a
dashboard can tell a label's stratum from a guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from longdoc.core.models import Chunk, DocumentRecord

KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("regulation", ("regulation", "directive", "gdpr", "act", "statute", "ordinance")),
    ("policy", ("policy", "wording", "insurance", "endorsement", "homeowners")),
    ("contract", ("agreement", "contract", "lease", "license", "licence", "amendment", "cuad")),
)
"""Title keywords per inferred kind (ours), tried in this order on the path's words; the first kind with a
keyword among them wins (``cuad`` is the CUAD corpus folder: every document in it is a contract)."""


def infer_doc_type(path: str) -> str | None:
    """``contract``/``policy``/``regulation`` from the words of ``path``'s file name and folder, or None.

    Words are the runs of letters of the last two path parts (higher folders are the machine's, not the
    document's), lower-cased (``cuad/herimports-maintenance-agreement.pdf`` ->
    ``cuad``, ``herimports``, ``maintenance``, ``agreement``, ``pdf``: ``contract``)."""
    tail = "/".join(path.replace("\\", "/").split("/")[-2:])
    words = set(re.findall(r"[a-z]+", tail.casefold()))
    return next((kind for kind, keys in KINDS if words & set(keys)), None)


def doc_type_of(chunks: Sequence[Chunk], record: DocumentRecord | None, path: str | None = None) -> tuple[str | None, bool]:
    """``(doc_type, inferred)`` of a document (module docstring); ``path`` defaults to the record's source."""
    meta = next((c.doc_type for c in chunks if c.doc_type), None) or (record.metadata.doc_type if record else None)
    if meta:
        return meta, False
    guess = infer_doc_type(path or (record.source if record else ""))
    return guess, guess is not None
