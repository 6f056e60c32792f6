"""Chunk settings per document kind: the ``policy`` profile for policy wordings, the deployment's for the rest.

One deployment serves contracts and policy sets, so chunk sizes cannot be one setting. A
document's metadata (its ``.metadata.json`` sidecar, or S3 object metadata, see
:mod:`longdoc.ingest.metadata`) picks its profile:

- ``doc_type`` naming a profile (``policy``), or a policy kind (``wording``, ``endorsement``,
  ``policy-wording``, ``policy-set``), or any document with a ``collection`` (collections are
  policy sets, :mod:`longdoc.triage.collections`): the :data:`POLICY` profile, the design's
  numbers (300 target / 400 max estimated tokens, the demo's ``LONGDOC_CHUNK_TARGET_TOKENS=300
  LONGDOC_CHUNK_MAX_TOKENS=400``; docs/architecture.md: a 400-token cap puts three clauses in
  the 1,200-token clause band);
- anything else (contracts, ``doc_type`` unset): the deployment's ``LONGDOC_CHUNK_*`` settings.

The chunking a version was stored with is recorded on its registry entry
(:attr:`~longdoc.core.models.DocumentRecord.chunking`, :func:`chunking_label`), so the next ingest
of the same bytes under another profile re-chunks that version (its chunk ids are deterministic,
and embeddings are cached by content, so only changed chunk texts are embedded again).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, TypeVar

from longdoc.core.models import DocumentMetadata


class ChunkSizes(Protocol):
    """What a profile sets on ingest's options (:class:`longdoc.ingest.pipeline.IngestOptions`, a dataclass)."""

    @property
    def target_tokens(self) -> int:
        """Target chunk size (estimated tokens)."""
        ...

    @property
    def max_tokens(self) -> int:
        """Largest chunk (estimated tokens)."""
        ...

    @property
    def overlap(self) -> float:
        """Overlap of a split section's continuation (share of the target)."""
        ...


Options = TypeVar("Options", bound=ChunkSizes)


@dataclasses.dataclass(frozen=True)
class ChunkProfile:
    """Chunk sizes of one document kind: target and max in estimated tokens, overlap as a share (0.10-0.20)."""

    name: str
    target_tokens: int
    max_tokens: int
    overlap: float = 0.15


POLICY = ChunkProfile("policy", 300, 400)
"""Policy wordings and endorsements: the design's 300/400-token clause chunks."""
PROFILES = {POLICY.name: POLICY}
"""Profiles by name (``doc_type`` may name one)."""
POLICY_DOC_TYPES = frozenset({"policy", "wording", "endorsement", "policy-wording", "policy_wording",
                              "policy-set", "policy_set"})
"""``doc_type`` values that mean a policy document (compared case-insensitively, spaces stripped)."""


def profile_for(metadata: DocumentMetadata) -> ChunkProfile | None:
    """The profile ``metadata`` selects (see the module docstring); None: the deployment's settings."""
    kind = (metadata.doc_type or "").strip().lower()
    if kind in PROFILES:
        return PROFILES[kind]
    if kind in POLICY_DOC_TYPES or metadata.collection:
        return POLICY
    return None


def options_for(options: Options, metadata: DocumentMetadata) -> Options:
    """``options`` (a dataclass) with the chunk sizes of ``metadata``'s profile (the same object when it selects none)."""
    profile = profile_for(metadata)
    if profile is None:
        return options
    sized: Any = dataclasses.replace(options, target_tokens=profile.target_tokens,  # type: ignore[type-var]
                                     max_tokens=profile.max_tokens, overlap=profile.overlap)
    return sized


def chunking_label(options: ChunkSizes) -> str:
    """How a version was chunked, as recorded on its registry entry: ``"300/400/0.15"`` (target/max tokens, overlap)."""
    return f"{options.target_tokens}/{options.max_tokens}/{options.overlap:g}"
