"""The offline summary baseline: extractive LexRank per call, a deterministic, labelled stand-in for Claude.

It implements :class:`~longdoc.core.ports.StreamingModel` and reads only what Claude would
read (the rendered prompt of :mod:`longdoc.summarize.prompt`):

* a map call (document units): the most central sentences of the group
  (:func:`~longdoc.summarize.lexrank.top_sentences`, boosted by the focus words), verbatim,
  each citing its unit's section, plus the defined terms the units define
  (``"Insured Person" means ...``); the pipeline adds every amount, date and percentage;
* a reduce call (partial summaries): the most central statements, citations kept;
* the final synthesis (streamed): the same choice written as ``- statement [ids]`` lines,
  sent to ``on_text`` a few words at a time.

Statements are copied sentences, so they pass the citation checks; a correction request
is answered by withdrawing every statement. No LLM is involved: results name
:data:`SUMMARY_BASELINE_NAME` so they are never mistaken for Claude's.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections.abc import Callable
from typing import Any

from longdoc.core.messages import ModelRequest, ModelResponse, TextBlock, ToolUseBlock, Usage
from longdoc.core.text import split_sentences
from longdoc.core.tokens import estimate_tokens
from longdoc.summarize.lexrank import terms, top_sentences
from longdoc.summarize.prompt import SUMMARY_TOOL, parse_lines

SUMMARY_BASELINE_NAME = "offline-lexrank-summary-baseline-v1"
MAX_STATEMENT_CHARS = 400
_UNIT = re.compile(r'<unit-(?P<n>[0-9a-f]+) section="(?P<sid>[^"]*)">\n(?P<body>.*?)\n</unit-(?P=n)>', re.DOTALL)
_PARTIAL = re.compile(r'<partial-(?P<n>[0-9a-f]+) part="\d+">\n(?P<body>.*?)\n</partial-(?P=n)>', re.DOTALL)
_FOCUS = re.compile(r"<focus-(?P<n>[0-9a-f]+)>\n(?P<body>.*?)\n</focus-(?P=n)>", re.DOTALL)
_TASK = re.compile(r"TASK \((?P<kind>map|reduce|final)\):\n.*?at most (?P<k>\d+) statements", re.DOTALL)
_DEFINED = re.compile(r"[“\"](?P<term>[A-Z][^”\"\n]{1,60})[”\"]\s+(?:means|shall mean|has the meaning|refers to)")


def _clip(sentence: str) -> str:
    words = " ".join(sentence.split())
    if len(words) <= MAX_STATEMENT_CHARS:
        return words
    cut = words[:MAX_STATEMENT_CHARS]
    return (cut[: cut.rfind(" ")] if " " in cut else cut) + " …"


def _without_heading(body: str) -> str:
    """The unit's text without its first line when that line is a heading (short, no full stop)."""
    first, _, rest = body.partition("\n")
    return rest if rest and len(first) < 120 and not first.rstrip().endswith((".", ":", ";")) else body


def _prompt(request: ModelRequest) -> str:
    first = request.messages[0].content
    return first if isinstance(first, str) else " ".join(str(b.get("text", "")) for b in first)


def _candidates(prompt: str) -> tuple[list[tuple[str, list[str]]], list[dict[str, str]]]:
    """Sentences of the units (each citing its section), or the statements of the partials; defined terms."""
    units = list(_UNIT.finditer(prompt))
    if not units:
        return [item for m in _PARTIAL.finditer(prompt) for item in parse_lines(m.group("body")) if item[1]], []
    out: list[tuple[str, list[str]]] = []
    defined: list[dict[str, str]] = []
    for m in units:
        sid = html.unescape(m.group("sid"))
        body = _without_heading(m.group("body").split("\n", 1)[1] if "\n" in m.group("body") else "")
        out += [(_clip(body[a:b]), [sid]) for a, b in split_sentences(body)]
        defined += [{"value": d.group("term"), "kind": "defined_term", "section": sid} for d in _DEFINED.finditer(body)]
    return out, defined


def _unmarked(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``blocks`` without their ``cache_control`` marks: the baseline's token estimate reads the text, not the marks."""
    return [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]


class SummaryBaselineModel:
    """Deterministic extractive summariser behind the model port (see the module docstring)."""

    name = SUMMARY_BASELINE_NAME

    def _choose(self, request: ModelRequest) -> tuple[str, list[tuple[str, list[str]]], list[dict[str, str]]]:
        prompt = _prompt(request)
        task = _TASK.search(prompt)
        if task is None:
            raise ValueError("not a summary prompt: no TASK line")
        candidates, defined = _candidates(prompt)
        focus = _FOCUS.search(prompt)
        wanted = set(terms(focus.group("body"))) if focus else set()
        boost = [len(wanted & set(terms(t))) / len(wanted) * 3 if wanted else 0.0 for t, _ in candidates]
        picked = top_sentences([t for t, _ in candidates], int(task.group("k")), boost)
        if wanted:
            picked = [i for i in picked if boost[i] > 0] or picked[:1]
        return task.group("kind"), [candidates[i] for i in picked], defined

    def _response(self, request: ModelRequest, content: list[TextBlock | ToolUseBlock], stop: str) -> ModelResponse:
        prompt = json.dumps([m.model_dump() for m in request.messages])
        used = sum(estimate_tokens(b.text if isinstance(b, TextBlock) else json.dumps(b.input)) for b in content)
        digest = hashlib.sha256(prompt.encode()).hexdigest()[:16]
        return ModelResponse(id=f"msg_summary_baseline_{digest}", model=self.name, content=content,
                             stop_reason=stop,
                             usage=Usage(input_tokens=estimate_tokens(prompt + json.dumps(_unmarked(request.system))),
                                         output_tokens=used))

    def create(self, request: ModelRequest) -> ModelResponse:
        """Answer one summary request: a ``record_summary`` tool call (map, reduce, corrections) or text (final).

        Raises ValueError when the prompt is not one of :mod:`longdoc.summarize.prompt`'s.
        """
        if len(request.messages) > 1:  # a correction request: withdraw everything (statements were verbatim)
            block = ToolUseBlock(id="toolu_baseline_withdraw", name=SUMMARY_TOOL, input={"statements": []})
            return self._response(request, [block], "tool_use")
        kind, chosen, defined = self._choose(request)
        if kind == "final":
            return self._response(request, [TextBlock(text=self._lines(chosen))], "end_turn")
        payload: dict[str, Any] = {"statements": [{"text": t, "sections": s} for t, s in chosen],
                                   "exact_values": defined}
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]
        return self._response(request, [ToolUseBlock(id=f"toolu_{digest}", name=SUMMARY_TOOL, input=payload)],
                              "tool_use")

    @staticmethod
    def _lines(chosen: list[tuple[str, list[str]]]) -> str:
        return "\n".join(f"- {text} [{'; '.join(sections)}]" for text, sections in chosen)

    def stream(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelResponse:
        """As :meth:`create`, with the text sent to ``on_text`` about eight words at a time."""
        response = self.create(request)
        for block in response.content:
            if isinstance(block, TextBlock):
                words = re.findall(r"\S+\s*", block.text)
                for i in range(0, len(words), 8):
                    on_text("".join(words[i:i + 8]))
        return response


def summary_model_name(wired: str) -> str:
    """The model a summary records: :data:`SUMMARY_BASELINE_NAME` when the wiring picked an offline baseline."""
    return SUMMARY_BASELINE_NAME if wired.startswith("offline-") else wired
