"""Prompt-cache accounting of the strict Claude fakes, from a request's ``cache_control`` breakpoints.

Rules (CACHE https://platform.claude.com/docs/en/build-with-claude/prompt-caching unless named):

* The prompt is read in cache order, tools -> system -> messages; a breakpoint is a block with
  ``cache_control`` (at most 4, checked by :mod:`tests.fakes.claude_contract`); a top-level
  ``cache_control`` (automatic caching) puts one on the last block.
* A read is reported only for a byte-identical prefix (blocks compared without their marks)
  written earlier *in the same cache*, for the same model, and not expired: 5 minutes or 1 hour
  after its last write or read (``ttl``). A hit refreshes the entry's lifetime.
* A prefix shorter than the row's ``min_cacheable_tokens`` is neither written nor read
  (S55-NEW: 512 tokens on Sonnet 5.5): both counters stay 0.
* Message Batches have their own cache, separate from Messages (issue 25; no stored doc page
  says so, NOT FOUND): use one :class:`StrictCache` per surface. Writes of a batch's items
  become readable only when that batch has ended (:meth:`StrictCache.commit`), so items of one
  batch never read each other's writes.
* Tokens are the fake's tokenizer (:func:`tests.fakes.claude_wire.block_tokens`).

Simplifications: no 20-block lookback limit; the tokens between two breakpoints are written at
the TTL of the later breakpoint.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.claude_wire import block_tokens, compact, prompt_blocks, unmarked

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


@dataclass
class CacheRecord:
    """The input side of one request: tokens read, written (5m / 1h) and uncached."""

    surface: str
    read: int
    written_5m: int
    written_1h: int
    uncached: int

    @property
    def written(self) -> int:
        return self.written_5m + self.written_1h

    @property
    def total(self) -> int:
        return self.read + self.written + self.uncached


@dataclass
class _Breakpoint:
    key: str
    tokens: int
    ttl: str


@dataclass
class StrictCache:
    """One prompt cache (one surface). ``clock()`` gives seconds; ``records`` one per request."""

    surface: str = "messages"
    clock: Callable[[], float] = time.time
    entries: dict[str, tuple[int, float, str]] = field(default_factory=dict)
    pending: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)
    records: list[CacheRecord] = field(default_factory=list)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    @staticmethod
    def breakpoints(model_key: str, body: dict[str, Any]) -> tuple[list[_Breakpoint], int]:
        """The request's breakpoint prefixes (hash key, tokens up to and including it, ttl) and its total tokens."""
        digest = hashlib.sha256(model_key.encode())
        blocks = prompt_blocks(body)
        auto = body.get("cache_control") if isinstance(body.get("cache_control"), dict) else None
        total, marks = 0, []
        for n, block in enumerate(blocks):
            digest.update(compact(unmarked(block)).encode())
            total += block_tokens(block)
            mark = block.get("cache_control") if isinstance(block.get("cache_control"), dict) else None
            if mark is None and auto is not None and n == len(blocks) - 1:
                mark = auto
            if mark is not None:
                marks.append(_Breakpoint(digest.copy().hexdigest(), total, str(mark.get("ttl", "5m"))))
        return marks, total + 3 * len(body.get("messages") or [])

    def _live(self, key: str, now: float) -> bool:
        entry = self.entries.get(key)
        return entry is not None and entry[1] > now

    def account(self, model_key: str, body: dict[str, Any], min_tokens: int, *, batch: str | None = None) -> dict[str, Any]:
        """The ``usage`` input fields of ``body`` (module docstring), recording the request.

        ``batch``: the id of the batch the request belongs to; its writes wait for :meth:`commit`.
        Returns ``input_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens`` and
        ``cache_creation: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}``.
        """
        marks, total = self.breakpoints(model_key, body)
        marks = [m for m in marks if m.tokens >= min_tokens]
        with self._lock:
            now = self.clock()
            hits = [m for m in marks if self._live(m.key, now)]
            read = max((m.tokens for m in hits), default=0)
            for m in hits:
                size, _, ttl = self.entries[m.key]
                self.entries[m.key] = (size, now + TTL_SECONDS[ttl], ttl)
            written = {"5m": 0, "1h": 0}
            done = read
            for m in marks:
                if m.tokens > done:
                    written[m.ttl if m.ttl in written else "5m"] += m.tokens - done
                    done = m.tokens
                    if batch is None:
                        self.entries[m.key] = (m.tokens, now + TTL_SECONDS.get(m.ttl, 300.0), m.ttl)
                    else:
                        self.pending.setdefault(batch, []).append((m.key, m.tokens, m.ttl))
            record = CacheRecord(self.surface, read, written["5m"], written["1h"],
                                 total - read - written["5m"] - written["1h"])
            self.records.append(record)
        return {"input_tokens": record.uncached, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": record.written,
                "cache_creation": {"ephemeral_5m_input_tokens": written["5m"],
                                   "ephemeral_1h_input_tokens": written["1h"]}}

    def commit(self, batch: str) -> None:
        """Make the writes of ``batch`` readable (the batch has ended); their lifetime starts now."""
        with self._lock:
            now = self.clock()
            for key, tokens, ttl in self.pending.pop(batch, []):
                self.entries[key] = (tokens, now + TTL_SECONDS.get(ttl, 300.0), ttl)

    def stats(self) -> dict[str, Any]:
        """Totals over every recorded request: ``read``, ``written``, ``uncached``, ``input`` (their
        sum), ``read_share`` (read / input, 0 when no input) and ``requests`` (the per-request records)."""
        with self._lock:
            records = list(self.records)
        read = sum(r.read for r in records)
        written = sum(r.written for r in records)
        uncached = sum(r.uncached for r in records)
        total = read + written + uncached
        return {"read": read, "written": written, "uncached": uncached, "input": total,
                "read_share": read / total if total else 0.0, "requests": records}
