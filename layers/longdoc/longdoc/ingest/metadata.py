"""Document metadata of one object: its own user metadata, then its ``.metadata.json`` sidecar.

Pure functions over what the caller already read (the ingest handler reads the object, its
user metadata and its sidecar once); nothing here goes back to a store.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from longdoc.core.errors import DocumentError
from longdoc.core.models import METADATA_FIELDS, DocumentMetadata
from longdoc.ingest.profiles import POLICY_DOC_TYPES, PROFILES

METADATA_SUFFIX = ".metadata.json"
"""A sidecar ``<file>.metadata.json`` beside a document holds its optional metadata."""
SIDECAR_WARNING = "metadata sidecar "
"""How every :func:`sidecar_warnings` line starts (a record's warnings of its metadata, replaced when it changes)."""
CLOSE_KEY = 0.8
"""Least :class:`difflib.SequenceMatcher` ratio for an unknown key to be named a misspelling of a known one
(``efective_from`` -> ``effective_from``, 0.96; ``notes`` is not ``endorses``, 0.77)."""


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
            message = str(error["msg"]).removeprefix("Value error, ")  # pydantic's prefix of a validator's own message
            problems.append(f"metadata {name}{origin}: {message}")
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


def sidecar_warnings(key: str, raw: bytes | None) -> list[str]:
    """One warning per key of the sidecar bytes ``raw`` of the object at ``key`` that is not a metadata
    field (docs/extraction.md, metadata: other keys are ignored, so a misspelt ``efective_from`` leaves a wording with
    no dates), naming the key and the closest field (:data:`CLOSE_KEY`), else the fields::

        metadata sidecar incoming/a.md.metadata.json: unknown key 'efective_from' ignored (did you mean 'effective_from'?)

    A ``doc_type`` close to a policy type but not one (``polcy``), in a sidecar with no ``collection``, is
    warned about too: it gets the deployment's chunk settings, not the policy profile
    (:mod:`longdoc.ingest.profiles`). Empty when there is no sidecar or it is not a JSON object
    (:func:`sidecar_values` fails the document then)."""
    try:
        values = sidecar_values(key, raw)
    except DocumentError:
        return []
    out = []
    for name in values:
        if _field(name) in METADATA_FIELDS:
            continue
        close = difflib.get_close_matches(_field(name), METADATA_FIELDS, n=1, cutoff=CLOSE_KEY)
        hint = f"did you mean {close[0]!r}?" if close else f"metadata keys: {', '.join(METADATA_FIELDS)}"
        out.append(f"{SIDECAR_WARNING}{sidecar_key(key)}: unknown key {str(name)!r} ignored ({hint})")
    fields = {_field(n): v for n, v in values.items()}  # "Doc-Type", "COLLECTION": keys as the metadata reads them
    kind, known = fields.get("doc_type"), sorted(POLICY_DOC_TYPES | set(PROFILES))
    if isinstance(kind, str) and kind.strip().lower() not in known and not fields.get("collection"):
        close = difflib.get_close_matches(kind.strip().lower(), known, n=1, cutoff=CLOSE_KEY)
        if close:  # "polcy": a policy meant, chunked as a contract
            out.append(f"{SIDECAR_WARNING}{sidecar_key(key)}: doc_type {kind!r} is not a policy type, so the "
                       f"deployment's chunk settings apply, not the policy profile (did you mean {close[0]!r}?)")
    return out


def with_sidecar_warnings(warnings: list[str], key: str, raw: bytes | None) -> list[str]:
    """``warnings`` (a record's) with its sidecar warnings replaced by those of ``raw`` (:func:`sidecar_warnings`)."""
    return [w for w in warnings if not w.startswith(SIDECAR_WARNING)] + sidecar_warnings(key, raw)
