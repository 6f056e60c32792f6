"""Document ids and versions: a readable id from the object key, a version from the bytes."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from longdoc.core.documents import INCOMING_PREFIX

VERSION_HEX_DIGITS = 16
"""A document version is this many leading hex digits of the SHA-256 of its bytes."""

DOC_ID_MAX_CHARS = 96
"""Longest document id, in characters (ASCII)."""

NAME_HASH_HEX_DIGITS = 8
"""Hex digits of the name hash a document id carries when its name is not all Latin (32 bits)."""


def _stem(key: str) -> str:
    """The file name of ``key`` without ``incoming/`` and without its extension (1-8 ASCII letters/digits)."""
    name = key[len(INCOMING_PREFIX):] if key.startswith(INCOMING_PREFIX) else key
    return re.sub(r"\.[A-Za-z0-9]{1,8}$", "", name)


def _loses_letters(folded: str) -> bool:
    """Whether ASCII folding drops a letter or digit of ``folded`` (an NFKD string).

    Combining marks (``Ü`` = ``U`` + U+0308) are not letters, so accents lose nothing; a
    letter or digit with no ASCII decomposition (``契``, ``Ж``, ``ß``, ``٣``) is lost.
    """
    return any(not ch.isascii() and unicodedata.category(ch)[0] in "LN" for ch in folded)


def doc_id_for_key(key: str) -> str:
    """Derive a readable, stable doc id (ASCII, at most 96 characters) from an object key or file name.

    The name (without ``incoming/`` and its extension) is folded to ASCII (NFKD, marks
    dropped), lower-cased, and every run of other characters becomes one ``-``:
    ``incoming/Master Services Agreement (v2) – Ünïcode.pdf`` -> ``master-services-agreement-v2-unicode``.
    That slug alone is the id whenever folding lost no letter or digit, so ids of Latin
    names never change. When it lost any (another script: ``賃貸契約 2024.pdf``), the id is
    the slug plus ``-`` and the first 8 hex digits of the SHA-256 of the NFC-normalised name
    without extension (``2024-3f1c9a0b``), or ``doc-`` and that hash when nothing Latin is
    left (``契約書.pdf`` -> ``doc-…``). So two names in another script never share an id,
    the NFC and NFD spellings of one name (macOS writes NFD) share theirs, and
    ``契約書.pdf`` / ``契約書.docx`` are versions of one document, as ``contract.pdf`` /
    ``contract.docx`` are. Never raises: every name, even an empty one, has an id.
    """
    stem = _stem(key)
    folded = unicodedata.normalize("NFKD", stem)
    slug = re.sub(r"[^a-z0-9]+", "-", folded.encode("ascii", "ignore").decode().lower()).strip("-")
    if slug and not _loses_letters(folded):
        return slug[:DOC_ID_MAX_CHARS]
    digest = hashlib.sha256(unicodedata.normalize("NFC", stem).encode("utf-8")).hexdigest()[:NAME_HASH_HEX_DIGITS]
    head = slug[:DOC_ID_MAX_CHARS - NAME_HASH_HEX_DIGITS - 1].rstrip("-") or "doc"
    return f"{head}-{digest}"


def version_from_sha256(digest: str) -> str:
    """The document version for a SHA-256 hex ``digest`` of its bytes: its first 16 hex digits."""
    return digest[:VERSION_HEX_DIGITS]


def version_for(data: bytes) -> str:
    """The document version of ``data``: first 16 hex digits of its SHA-256.

    Hashes ``data``; when the digest is already at hand use :func:`version_from_sha256`.
    """
    return version_from_sha256(hashlib.sha256(data).hexdigest())
