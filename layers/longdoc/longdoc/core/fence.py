"""Fences for untrusted text in prompts: tags that no document, claim or note can close.

Document text, claim forms and adjusters' notes are data, never instructions. A plain
``<chunk>...</chunk>`` fence can be closed by text that contains ``</chunk>``; these fences
carry a nonce derived from a hash of everything fenced in one prompt, so the text would have
to contain a hash of itself to forge one. The nonce is deterministic, so the same content
gives byte-identical prompts (prompt caching keeps working across sessions).
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Iterable

NONCE_CHARS = 12
"""Hex characters of the nonce (48 bits): guessing it by chance is out of reach for a document."""


def fence_nonce(texts: Iterable[str], salt: str = "") -> str:
    """A nonce for one prompt: the first :data:`NONCE_CHARS` hex digits of SHA-256 over ``texts``.

    Deterministic (same texts, same nonce). A text that happens to contain the nonce gets
    a different one (the salt is extended) so that no fenced text ever contains its tag.
    """
    items = list(texts)
    digest = hashlib.sha256()
    for text in items:
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    digest.update(salt.encode("utf-8"))
    nonce = digest.hexdigest()[:NONCE_CHARS]
    if any(nonce in text for text in items):
        return fence_nonce(items, salt + "+")
    return nonce


def tag(name: str, nonce: str) -> str:
    """The fenced tag name: ``chunk`` with nonce ``3f9a...`` -> ``chunk-3f9a...``."""
    return f"{name}-{nonce}"


def fence(name: str, text: str, nonce: str, **attrs: object) -> str:
    """Wrap ``text`` in a ``<name-NONCE attr="...">`` ... ``</name-NONCE>`` fence, text unchanged.

    Attribute values are HTML-escaped (quotes included); the text itself is not escaped, so
    quotes copied from it stay verbatim. Raises ``ValueError`` when ``text`` contains the
    nonce (build the nonce with :func:`fence_nonce` over every fenced text to rule that out).
    """
    if nonce in text:
        raise ValueError("fenced text contains the fence nonce; derive the nonce from every fenced text")
    rendered = "".join(f' {key}="{html.escape(str(value), quote=True)}"' for key, value in attrs.items())
    return f"<{tag(name, nonce)}{rendered}>\n{text}\n</{tag(name, nonce)}>"
