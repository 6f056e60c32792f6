"""Document ids and versions: a readable id from the object key, a version from the bytes."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from longdoc.core.documents import INCOMING_PREFIX
from longdoc.core.errors import DocumentError

VERSION_HEX_DIGITS = 16
"""A document version is this many leading hex digits of the SHA-256 of its bytes."""


def doc_id_for_key(key: str) -> str:
    """Derive a readable, stable doc id (at most 96 characters) from an object key or file name.

    ``incoming/Master Services Agreement (v2) – Ünïcode.pdf`` -> ``master-services-agreement-v2-unicode``.
    Raises :class:`DocumentError` (naming ``key``) when nothing usable remains.
    """
    name = key[len(INCOMING_PREFIX):] if key.startswith(INCOMING_PREFIX) else key
    stem = re.sub(r"\.[A-Za-z0-9]{1,8}$", "", name)
    ascii_ = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_.lower()).strip("-")
    if not slug:
        raise DocumentError(key, "cannot derive a document id from this name")
    return slug[:96]


def version_from_sha256(digest: str) -> str:
    """The document version for a SHA-256 hex ``digest`` of its bytes: its first 16 hex digits."""
    return digest[:VERSION_HEX_DIGITS]


def version_for(data: bytes) -> str:
    """The document version of ``data``: first 16 hex digits of its SHA-256.

    Hashes ``data``; when the digest is already at hand use :func:`version_from_sha256`.
    """
    return version_from_sha256(hashlib.sha256(data).hexdigest())
