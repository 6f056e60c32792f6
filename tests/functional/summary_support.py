"""Shared pieces of the summary tests: a generated policy document in the local stores, and a Claude-shaped fake.

:func:`policy_pdf` draws one numbered section per page (an amount, a notice period in days
per sentence), so every statement has a section and a page to cite. :class:`ClaudeShaped`
answers the loopback Messages fake: the offline summary baseline decides *what* to say from
the prompt it is sent (so statements are real text of the document), and a test's ``tamper``
hook changes *how* (a wrong number, a failing correction, an error reply).
"""

from __future__ import annotations

import json
import random
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from longdoc.adapters.state import SqliteStateStore
from longdoc.adapters.blob import LocalBlobStore
from longdoc.core.documents import chunks_key
from longdoc.core.messages import Message, ModelRequest
from longdoc.core.models import DocumentRecord
from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse import parse_document
from longdoc.summarize.baseline import SummaryBaselineModel
from tests.fakes.anthropic_server import Reply, message_reply, usage_json
from tests.unit.pdf_builder import text_pdf

TOPICS = ["medical expenses", "baggage", "travel delay", "cancellation", "personal liability",
          "emergency evacuation", "hospital confinement", "rental vehicle excess", "home contents", "pet care"]


def section_amount(k: int) -> str:
    """The amount section ``k`` states: ``$1,250.00`` for section 1."""
    return f"${k * 1000 + 250:,}.00"


def policy_pages(sections: int, sentences: int = 18) -> list[list[str]]:
    """One page of wrapped lines per numbered section ``1. Medical Expenses`` ..."""
    rng = random.Random(sections)
    pages = []
    for k in range(1, sections + 1):
        topic = TOPICS[(k - 1) % len(TOPICS)]
        body = [f"We will pay the Insured Person for {topic} up to {section_amount(k)} per claim."]
        body += [f"The Insured Person must notify Us of any {topic} claim within {rng.randint(2, 90)} days of the "
                 "event and send Us the receipts and reports We ask for." for _ in range(sentences)]
        pages.append([f"{k}. {topic.title()}", *textwrap.wrap(" ".join(body), 95)])
    return pages


def add_document(home: Path, doc_id: str, data: bytes, name: str, status: str = "READY",
                 reason: str | None = None) -> DocumentRecord:
    """Parse and chunk ``data`` and store it as an ingested version (chunks in the bucket, registry entry)."""
    parsed = parse_document(name, data) if data else None  # no bytes: a READY version whose chunk list is empty
    chunks = chunk_document(parsed, doc_id) if parsed else []
    version = chunks[0].doc_version if chunks else "0" * 16
    LocalBlobStore(home / "bucket").put(chunks_key(doc_id, version),
                                        "".join(c.model_dump_json() + "\n" for c in chunks).encode())
    record = DocumentRecord(doc_id=doc_id, doc_version=version, source=name, status=status, reason=reason,  # type: ignore[arg-type]
                            pages=len(parsed.pages) if parsed else 0, chunks=len(chunks), updated_at="2026-01-01T00:00:00+00:00")
    SqliteStateStore(home / "state.sqlite3").put_document(record)
    return record


def add_policy(home: Path, doc_id: str = "policy", sections: int = 8) -> DocumentRecord:
    """The generated policy as a PDF, ingested (one section per page)."""
    return add_document(home, doc_id, text_pdf(policy_pages(sections)), f"{doc_id}.pdf")


def kind_of(body: dict[str, Any]) -> str:
    """``map``, ``reduce``, ``final`` or ``correction`` for a request body our prompts built."""
    if len(body["messages"]) > 1:
        return "correction"
    text = body["messages"][0]["content"]
    for kind in ("map", "reduce", "final"):
        if f"TASK ({kind}):" in text:
            return kind
    return "unknown"


class ClaudeShaped:
    """Computes each reply from the baseline's answer; ``tamper(kind, body, content) -> content | Reply``."""

    def __init__(self, tamper: Callable[[str, dict[str, Any], list[dict[str, Any]]], Any] | None = None):
        self.baseline = SummaryBaselineModel()
        self.tamper = tamper
        self.kinds: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        kind = kind_of(body)
        with self.lock:
            self.kinds.append(kind)
        request = ModelRequest(system=body.get("system", []), tools=body.get("tools", []),
                               max_tokens=body["max_tokens"], messages=[Message(**m) for m in body["messages"]])
        answer = self.baseline.create(request)
        content = [b.model_dump() for b in answer.content]
        if self.tamper is not None:
            tampered = self.tamper(kind, body, content)
            if isinstance(tampered, Reply):
                return tampered
            content = tampered
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        tokens = len(json.dumps(body)) // 4
        return message_reply(content, stop, usage_json(tokens, answer.usage.output_tokens))


def claude_home(home: Path, monkeypatch: Any, **settings: str) -> Path:
    """Make ``home`` a local LONGDOC_HOME with Claude chosen (a fake key) and summary sizes small
    enough to map a few pages (single call up to 3,000 tokens); ``settings`` adds ``LONGDOC_*``
    variables by their lower-case suffix (``summary_map_concurrency="1"``). The caller resets
    ``wiring`` around it (the fixtures do)."""
    from longdoc import wiring

    for name, value in {"LONGDOC_HOME": str(home), "LONGDOC_MODE": "local", "LONGDOC_MODEL": "claude",
                        "ANTHROPIC_API_KEY": "test-key-not-real", "LONGDOC_SUMMARY_SINGLE_CALL_TOKENS": "3000",
                        **{f"LONGDOC_{k.upper()}": v for k, v in settings.items()}}.items():
        monkeypatch.setenv(name, value)
    wiring.reset()
    return home
