"""The object to ingest, as its reader got it once: :class:`IngestSource`."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from longdoc.core.models import DocumentMetadata
from longdoc.ingest.ids import doc_id_for_key, version_from_sha256
from longdoc.ingest.metadata import document_metadata, with_sidecar_warnings


@dataclass(frozen=True)
class IngestSource:
    """One object as its reader got it, once: ``data`` (bytes), user metadata and sidecar.

    ``key`` is the object key (``incoming/<name>``); ``object_metadata`` its user metadata
    (S3 ``x-amz-meta-*`` names, lower-case, or any mapping of metadata names to values);
    ``sidecar`` the bytes of ``<key>.metadata.json`` or None. ``doc_id`` defaults to
    :func:`doc_id_for_key` of ``key``. ``sha256`` (64 hex digits) is computed here, once;
    the handler (log keys) and the pipeline (version, registry) use it instead of hashing
    the bytes again.
    """

    key: str
    data: bytes
    object_metadata: Mapping[str, Any] = field(default_factory=dict)
    sidecar: bytes | None = None
    doc_id: str = ""
    sha256: str = field(init=False, default="")

    def __post_init__(self) -> None:
        """Derive ``doc_id`` (when not given) and hash the bytes."""
        if not self.doc_id:
            object.__setattr__(self, "doc_id", doc_id_for_key(self.key))
        object.__setattr__(self, "sha256", hashlib.sha256(self.data).hexdigest())

    @property
    def version(self) -> str:
        """The document version: the first 16 hex digits of :attr:`sha256`."""
        return version_from_sha256(self.sha256)

    @property
    def name(self) -> str:
        """The file name: the last ``/``-separated part of ``key``."""
        return self.key.rsplit("/", 1)[-1]

    def metadata(self) -> DocumentMetadata:
        """The merged document metadata (:func:`longdoc.ingest.metadata.document_metadata`).

        Raises :class:`DocumentError` naming the key, field and source for a bad value.
        """
        return document_metadata(self.key, self.object_metadata, self.sidecar)

    def warnings(self, recorded: list[str] | None = None) -> list[str]:
        """``recorded`` (a record's warnings; None: none) with its sidecar warnings replaced by this
        sidecar's (:func:`longdoc.ingest.metadata.sidecar_warnings`: unknown keys, the closest field named)."""
        return with_sidecar_warnings(list(recorded or []), self.key, self.sidecar)
