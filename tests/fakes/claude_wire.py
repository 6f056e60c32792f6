"""Shared pieces of the strict Claude fakes: the fake's tokenizer, conversation prefixes, thinking signatures.

* **Tokenizer** (:func:`block_tokens`, :func:`count_input_tokens`): the fake's own deterministic
  rule, ``ceil(len(compact JSON of the block without cache_control) / 3.1)`` per content block
  (3.1 characters per token: the Sonnet 5 tokenizer gives about 30% more tokens than Sonnet 4.6's
  ~4 characters per token, S5-MIG https://platform.claude.com/docs/en/models/sonnet-5/migration-guide).
  It is deliberately *not* the product's estimate: a product that budgets with characters per
  token sees the same kind of drift as against the real API.
* **Prefix** (:func:`prefix_digest`): what a thinking block is bound to, "top-level ``system``,
  ``tools``, and earlier ``messages``" (PRES https://platform.claude.com/docs/build-with-claude/preserved-thinking).
  Normalised before hashing: a string content is one text block, ``cache_control`` marks are
  left out (moving a breakpoint is not a change of the conversation) and thinking blocks of
  earlier turns are left out (the API ignores them on non-final turns; THINK page).
* **Signatures** (:class:`SignatureBook`): HMAC-SHA256 over the model family, the prefix digest
  and the thinking text, with a secret of the fake instance; so an echoed block verifies only
  when it is byte-identical, for the same model and the same conversation (S55-NEW: thinking
  blocks "are tied to the model and the conversation").
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import os
import threading
from typing import Any

CHARS_PER_TOKEN = 3.1
"""Characters per token of the fake's tokenizer (see the module docstring)."""

THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


def compact(obj: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def unmarked(block: dict[str, Any]) -> dict[str, Any]:
    """``block`` without its ``cache_control`` mark."""
    return {k: v for k, v in block.items() if k != "cache_control"}


def blocks_of(content: Any) -> list[dict[str, Any]]:
    """A message content as a list of blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def system_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's ``system`` as blocks (a string is one text block)."""
    system = body.get("system")
    return blocks_of(system) if system else []


def block_tokens(block: dict[str, Any]) -> int:
    """Tokens of one block by the fake's tokenizer (module docstring)."""
    return math.ceil(len(compact(unmarked(block))) / CHARS_PER_TOKEN)


def prompt_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every block of the prompt in cache order: tools, then system, then each message's content
    (CACHE https://platform.claude.com/docs/en/build-with-claude/prompt-caching: the prefix runs
    ``tools`` -> ``system`` -> ``messages``)."""
    out = [b for b in body.get("tools") or [] if isinstance(b, dict)] + system_blocks(body)
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            out.extend(blocks_of(message.get("content")))
    return out


def count_input_tokens(body: dict[str, Any]) -> int:
    """Input tokens of a request by the fake's tokenizer (every prompt block, plus 3 per message)."""
    return sum(block_tokens(b) for b in prompt_blocks(body)) + 3 * len(body.get("messages") or [])


def output_tokens(content: list[dict[str, Any]]) -> int:
    """Output tokens of reply blocks (thinking blocks are counted by the caller, by their budget)."""
    return sum(block_tokens(b) for b in content if b.get("type") not in THINKING_TYPES)


def prefix_digest(body: dict[str, Any], upto: int) -> str:
    """SHA-256 of the conversation prefix before ``messages[upto]`` (normalised; module docstring)."""
    messages = []
    for message in (body.get("messages") or [])[:upto]:
        if not isinstance(message, dict):
            continue
        kept = [unmarked(b) for b in blocks_of(message.get("content")) if b.get("type") not in THINKING_TYPES]
        messages.append({"role": message.get("role"), "content": kept})
    prefix = {"tools": [unmarked(t) for t in body.get("tools") or [] if isinstance(t, dict)],
              "system": [unmarked(b) for b in system_blocks(body)], "messages": messages}
    return hashlib.sha256(compact(prefix).encode()).hexdigest()


class SignatureBook:
    """Issues and verifies thinking-block signatures (module docstring); thread-safe.

    ``issued`` maps ``(model_key, prefix digest)`` to the thinking block issued as the start of
    the reply to that conversation, so a request that drops it can be told apart from one that
    never had it.
    """

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or os.urandom(32)
        self._lock = threading.Lock()
        self.issued: dict[tuple[str, str], dict[str, Any]] = {}

    def _mac(self, model_key: str, digest: str, thinking: str) -> str:
        mac = hmac.new(self._secret, f"{model_key}\n{digest}\n{thinking}".encode(), hashlib.sha256).digest()
        return base64.b64encode(b"fake-sig:" + mac).decode()

    def issue(self, model_key: str, body: dict[str, Any], thinking: str = "") -> dict[str, Any]:
        """A thinking block for the reply to ``body`` (the turn at ``messages[len(messages)]``)."""
        digest = prefix_digest(body, len(body.get("messages") or []))
        block = {"type": "thinking", "thinking": thinking, "signature": self._mac(model_key, digest, thinking)}
        with self._lock:
            self.issued[(model_key, digest)] = block
        return block

    def verifies(self, model_key: str, body: dict[str, Any], index: int, block: dict[str, Any]) -> bool:
        """Whether ``block`` (in ``messages[index]``) is one this book issued for this model and prefix."""
        if block.get("type") != "thinking" or not isinstance(block.get("signature"), str):
            return False  # redacted_thinking: this fake never issues one
        expected = self._mac(model_key, prefix_digest(body, index), str(block.get("thinking", "")))
        return hmac.compare_digest(expected, block["signature"])

    def issued_for(self, model_key: str, body: dict[str, Any], index: int) -> dict[str, Any] | None:
        """The thinking block issued as the start of the assistant turn ``messages[index]``, if any."""
        with self._lock:
            return self.issued.get((model_key, prefix_digest(body, index)))
