"""A summary correction that only repeats a statement already kept still reports the failed one as
dropped (the outside probe saw it vanish: neither among the statements nor in ``dropped``)."""

from __future__ import annotations

from typing import Any

from longdoc.core.messages import Message, ModelRequest, ModelResponse, ToolUseBlock, Usage
from longdoc.summarize.calls import Outcome, _correct
from longdoc.summarize.prompt import summary_tools
from longdoc.summarize.models import SectionCitation, Statement

KEPT = Statement(text="The insurer pays emergency dental treatment up to $500.",
                 citations=[SectionCitation(section_id="4.2")])


class _Checker:
    """Verifies every statement as KEPT's text (the shape of a correction that repeats it)."""

    def split(self, raw: Any) -> tuple[list[Statement], list[Any]]:
        return [KEPT for _ in raw], []


class _Model:
    name = "scripted"

    def create(self, request: ModelRequest) -> ModelResponse:
        call = ToolUseBlock(id="u2", name="record_summary",
                            input={"statements": [{"text": KEPT.text, "sections": ["4.2"]}]})
        return ModelResponse(id="m2", model="scripted", content=[call], stop_reason="tool_use", usage=Usage())


def test_a_correction_that_repeats_a_kept_statement_reports_the_failed_one_as_dropped() -> None:
    # Given an outcome that already holds KEPT, and one failed statement sent for correction
    outcome = Outcome(statements=[KEPT])
    failed = [(("The insurer pays 999,999 dollars for dental care.", ["4.2"]), "the amount is not in section 4.2")]
    request = ModelRequest(system=[], tools=summary_tools(), max_tokens=512,
                           messages=[Message(role="user", content="summarise")])
    turn = [Message(role="assistant", content=[{"type": "text", "text": "a summary"}]),
            Message(role="user", content="statement 1 failed its checks: correct or withdraw it")]
    # When the correction comes back with only a repeat of KEPT
    _correct(_Model(), request, turn, failed, _Checker(), outcome, "final")  # type: ignore[arg-type]
    # Then KEPT is kept once, and the failed statement is reported as dropped with the reason
    assert [s.text for s in outcome.statements] == [KEPT.text]
    assert [(d.text, d.stage) for d in outcome.dropped] == [("The insurer pays 999,999 dollars for dental care.",
                                                             "final")]
    assert "repeated a statement already kept" in outcome.dropped[0].reason
