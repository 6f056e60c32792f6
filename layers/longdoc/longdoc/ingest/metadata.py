"""Document metadata of one object: its own user metadata, then its ``.metadata.json`` sidecar.

Pure functions over what the caller already read (the ingest handler reads the object, its
user metadata and its sidecar once); nothing here goes back to a store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from longdoc.core.errors import DocumentError
from longdoc.core.models import DocumentMetadata

METADATA_SUFFIX = ".metadata.json"
"""A sidecar ``<file>.metadata.json`` beside a document holds its optional metadata."""


def sidecar_key(key: str) -> str:
    """The key of the metadata sidecar of the object at ``key`` (``<key>.metadata.json``)."""
    return key + METADATA_SUFFIX


def metadata_from_mapping(key: str, values: Mapping[str, Any] | None,
                          origins: Mapping[str, str] | None = None) -> DocumentMetadata:
    """Validate ``values`` into :class:`DocumentMetadata` (see :meth:`DocumentMetadata.from_mapping`).

    Raises :class:`DocumentError` for the object ``key`` naming each bad field, where its
    value came from (``origins[field]`` when given) and why, e.g.
    ``incoming/a.pdf: metadata term (sidecar incoming/a.pdf.metadata.json): String should
    have at most 200 characters``.
    """
    try:
        return DocumentMetadata.from_mapping(dict(values or {}))
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            # the one model-level rule is the order of the effective dates
            name = str(error["loc"][0]) if error.get("loc") else "effective_to"
            origin = f" ({origins[name]})" if origins and name in origins else ""
            problems.append(f"metadata {name}{origin}: {error['msg']}")
        raise DocumentError(key, "; ".join(problems)) from None


def _field(name: object) -> str:
    """A metadata name as a :class:`DocumentMetadata` field name (``Doc-Type`` -> ``doc_type``)."""
    return str(name).strip().lower().replace("-", "_")


def sidecar_values(key: str, raw: bytes | None) -> dict[str, Any]:
    """The JSON object in the sidecar bytes ``raw`` of the object at ``key``; ``{}`` when ``raw`` is None.

    The sidecar is UTF-8 with or without a byte order mark (editors on Windows write one;
    RFC 8259 section 8.1 lets a parser ignore it). Raises :class:`DocumentError` for the
    document ``key`` whose reason names the sidecar key (``metadata sidecar
    incoming/a.pdf.metadata.json is not valid JSON (...)``, the reason the version is recorded
    ``FAILED`` with) when it is not valid JSON or not a JSON object.
    """
    if raw is None:
        return {}
    try:
        values = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DocumentError(key, f"metadata sidecar {sidecar_key(key)} is not valid JSON ({exc})") from None
    if not isinstance(values, dict):
        kind = {list: "an array", str: "a string", bool: "true/false", type(None): "null"}.get(type(values), "a number")
        raise DocumentError(key, f"metadata sidecar {sidecar_key(key)} must be a JSON object, not {kind}")
    return values


def document_metadata(key: str, object_metadata: Mapping[str, Any] | None = None,
                      sidecar: bytes | None = None) -> DocumentMetadata:
    """The document metadata of the object at ``key`` from what was read with it.

    Two optional sources, merged key by key: ``object_metadata``, the object's own user
    metadata (:meth:`BlobStore.metadata`; on S3 ``x-amz-meta-doc-type``,
    ``-line-of-business``, ``-term``, and for policy sets ``-collection``, ``-effective-from``,
    ``-effective-to``, ``-endorses``, set at upload), then ``sidecar``, the bytes of
    ``<key>.metadata.json`` (None when there is none), whose keys override the object's
    (the sidecar is the later, explicit correction; a sidecar value of ``null`` or ``""``
    clears the object's value). Names may use ``-`` or ``_`` and any case; other names are
    ignored. A local folder has no object metadata, so there only the sidecar counts.

    Raises :class:`DocumentError` naming the object key, the field and its source for a bad
    value (see :func:`metadata_from_mapping`), or naming the sidecar for a sidecar that is
    not a JSON object.
    """
    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for name, value in (object_metadata or {}).items():
        merged[_field(name)] = value
        origins[_field(name)] = "object metadata"
    for name, value in sidecar_values(key, sidecar).items():
        merged[_field(name)] = value
        origins[_field(name)] = f"sidecar {sidecar_key(key)}"
    return metadata_from_mapping(key, merged, origins)
