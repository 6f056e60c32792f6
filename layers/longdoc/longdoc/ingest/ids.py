"""Document ids and versions: a readable id from the object key, a version from the bytes."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from longdoc.core.documents import INCOMING_PREFIX
from longdoc.core.models import DocumentRecord
from longdoc.core.ports import StateStore

VERSION_HEX_DIGITS = 16
"""A document version is this many leading hex digits of the SHA-256 of its bytes."""

DOC_ID_MAX_CHARS = 96
"""Longest document id, in characters (ASCII)."""

NAME_HASH_HEX_DIGITS = 8
"""Hex digits of the name hash a document id carries when its slug does not spell its name (32 bits)."""

NAME_HASH_SEPARATOR = "--"
"""What joins the slug and the name hash; a slug never holds it, so hashed and plain ids never meet."""


def _stem(key: str) -> str:
    """The file name of ``key`` without ``incoming/`` and without its extension (1-8 ASCII letters/digits)."""
    name = key[len(INCOMING_PREFIX):] if key.startswith(INCOMING_PREFIX) else key
    return re.sub(r"\.[A-Za-z0-9]{1,8}$", "", name)


def _slug(stem: str) -> str:
    """``stem`` folded to ASCII (NFKD, marks dropped), lower-cased, every other run of characters one ``-``."""
    folded = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")


def _name_hash(stem: str) -> str:
    """The first 8 hex digits of the SHA-256 of the NFC-normalised ``stem`` (UTF-8)."""
    return hashlib.sha256(unicodedata.normalize("NFC", stem).encode("utf-8")).hexdigest()[:NAME_HASH_HEX_DIGITS]


def doc_id_for_key(key: str) -> str:
    """Derive a readable, stable doc id (ASCII, at most 96 characters) from an object key or file name.

    The name is the key without ``incoming/`` and without its extension, NFC-normalised.
    Its slug is the name folded to ASCII (NFKD, marks dropped), lower-cased, with every
    run of other characters turned into one ``-``. When the slug spells the name exactly
    (lower-case ASCII letters and digits joined by single hyphens, at most 96 characters:
    ``herimports-maintenance-agreement.pdf``, ``lease-2024.txt``), the slug is the id. Any
    other name gets the slug, ``--`` and the first 8 hex digits of the SHA-256 of the NFC
    name: ``Contract.txt`` -> ``contract--<hash>``, ``my contract.txt`` and
    ``my_contract.txt`` -> ``my-contract--<hash>`` with two different hashes, ``契約書.pdf``
    -> ``doc--<hash>`` (``doc`` when nothing Latin is left).

    So two different names never share an id: a plain id never holds ``--``, so it never
    equals a hashed one, and two hashed ids differ in their name hash (equal only when
    32-bit hashes of two different names collide). Names differing only in their extension
    (``lease.pdf``, ``lease.docx``) are versions of one document, and the NFC and NFD
    spellings of a name (macOS writes NFD) share its id. Never raises: every name, even an
    empty one, has an id. Documents registered under an id of an earlier rule keep it
    (:func:`resolve_doc_id`).
    """
    stem = _stem(key)
    slug = _slug(stem)
    if slug and slug == unicodedata.normalize("NFC", stem) and len(slug) <= DOC_ID_MAX_CHARS:
        return slug
    room = DOC_ID_MAX_CHARS - NAME_HASH_HEX_DIGITS - len(NAME_HASH_SEPARATOR)
    head = slug[:room].rstrip("-") or "doc"
    return f"{head}{NAME_HASH_SEPARATOR}{_name_hash(stem)}"


def earlier_doc_ids(key: str) -> list[str]:
    """The ids earlier rules gave ``key``, newest rule first, without repeats or empty ids.

    Until issue 13: the slug alone, cut to 96 characters (``Contract.txt`` and
    ``contract.txt`` both ``contract``; nothing for a name without Latin letters). Then,
    for a name whose ASCII folding lost a letter or digit (another script): the slug, one
    ``-`` and the name hash (``賃貸契約 2024.pdf`` -> ``2024-cf3df3ae``), ``doc-<hash>``
    when no Latin letter was left.
    """
    stem = _stem(key)
    slug = _slug(stem)
    folded = unicodedata.normalize("NFKD", stem)
    lost = any(not ch.isascii() and unicodedata.category(ch)[0] in "LN" for ch in folded)
    ids: list[str] = []
    if lost or not slug:
        head = slug[:DOC_ID_MAX_CHARS - NAME_HASH_HEX_DIGITS - 1].rstrip("-") or "doc"
        ids.append(f"{head}-{_name_hash(stem)}")
    if slug and slug[:DOC_ID_MAX_CHARS] not in ids:
        ids.append(slug[:DOC_ID_MAX_CHARS])
    return ids


def _names_same_document(record: DocumentRecord, key: str) -> bool:
    """Whether ``record`` (a registered version) came from a name that today's rule gives ``key``'s id.

    Its ``source_key`` is compared when recorded; older records hold only the file name (``source``).
    """
    if record.source_key:
        return doc_id_for_key(record.source_key) == doc_id_for_key(key)
    return doc_id_for_key(record.source) == doc_id_for_key(key.rsplit("/", 1)[-1])


def resolve_doc_id(key: str, state: StateStore) -> str:
    """The doc id an object at ``key`` is ingested (or removed) under: its registered id, else today's.

    :func:`doc_id_for_key` gives today's id. When nothing is registered under it but an id an
    earlier rule gave the key (:func:`earlier_doc_ids`) holds a document whose latest
    version came from this name (same key, or a name with today's same id, such as
    another extension), that earlier id is kept: a re-upload stays a new version of the
    document already ingested, instead of a second copy under a new id. Names whose id
    never changed (lower-case, hyphenated) cost no registry read; others one to three
    reads. A registry already holding two names under one old id (``Contract.txt`` and
    ``contract.txt`` as ``contract``) keeps them there until the other name's id is free.
    """
    doc_id = doc_id_for_key(key)
    earlier = [e for e in earlier_doc_ids(key) if e != doc_id]
    if not earlier or state.get_document(doc_id) is not None:
        return doc_id
    for old in earlier:
        latest = state.get_document(old)
        if latest is not None and _names_same_document(latest, key):
            return old
    return doc_id


def version_from_sha256(digest: str) -> str:
    """The document version for a SHA-256 hex ``digest`` of its bytes: its first 16 hex digits."""
    return digest[:VERSION_HEX_DIGITS]


def version_for(data: bytes) -> str:
    """The document version of ``data``: first 16 hex digits of its SHA-256.

    Hashes ``data``; when the digest is already at hand use :func:`version_from_sha256`.
    """
    return version_from_sha256(hashlib.sha256(data).hexdigest())
