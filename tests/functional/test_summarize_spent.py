"""A billed reply whose follow-up call fails still counts in the summary's usage.

The map step is run directly (no engine), twice, as the state machine's Retry would: its first
attempt gets a map reply with a statement that fails the checks, then its correction call fails
with ``ModelUnavailable``; the second attempt goes through. The stored partial counts both map
replies and the correction.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.core.errors import ModelUnavailable
from longdoc.core.messages import ModelRequest, ModelResponse, ToolUseBlock
from longdoc.summarize import steps, store
from longdoc.summarize.baseline import SummaryBaselineModel
from longdoc.summarize.models import SummaryRequest
from longdoc.summarize.runs import start_summary
from tests.functional.summary_support import add_policy

BAD = {"text": "The deductible is $999.99 per claim.", "sections": ["1"]}


class _Starter:
    def start_execution(self, name: str, execution_input: dict[str, Any]) -> str:
        return f"arn:local:{name}"


class _FlakyCorrection(SummaryBaselineModel):
    """The baseline, whose map answers add a failing statement and whose first correction call fails."""

    def __init__(self) -> None:
        self.replies: list[ModelResponse] = []
        self.failed = 0

    def create(self, request: ModelRequest) -> ModelResponse:
        if len(request.messages) > 1 and not self.failed:
            self.failed += 1
            raise ModelUnavailable("Claude answered HTTP 200 with text/html, not JSON: <html>proxy")
        response = super().create(request)
        if len(request.messages) == 1:
            use = response.content[0]
            assert isinstance(use, ToolUseBlock)
            statements = [*use.input["statements"], BAD]
            response = response.model_copy(update={"content": [use.model_copy(update={
                "input": {**use.input, "statements": statements}})]})
        self.replies.append(response)
        return response


@pytest.fixture
def deps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path))
    monkeypatch.setenv("LONGDOC_MODE", "local")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("LONGDOC_SUMMARY_SINGLE_CALL_TOKENS", "3000")
    wiring.reset()
    add_policy(tmp_path, sections=8)
    yield wiring.summary_deps()
    wiring.reset()


def test_a_reply_billed_before_a_failed_correction_counts_in_the_partials_usage(deps: Any) -> None:
    # Given a planned summary and a model whose first correction call fails after a billed map reply
    model = _FlakyCorrection()
    deps = dataclasses.replace(deps, model=model)
    record = start_summary(SummaryRequest(doc_id="policy", length="short"), state=wiring.state_store(),
                           blobs=deps.blobs, starter=_Starter(), model_name=model.name)
    assert steps.plan(deps, record.summary_id)["mode"] == "map"
    # When the first attempt of map group 0 fails on its correction, and the retry goes through
    with pytest.raises(ModelUnavailable):
        steps.map_group(deps, record.summary_id, 0)
    first = model.replies[0].usage
    assert store.load_spent(deps.blobs, store.map_key(record.summary_id, 0)) == first
    steps.map_group(deps, record.summary_id, 0)
    # Then the stored partial counts the lost map reply too: both map replies and the correction
    partial = store.load_partial(deps.blobs, store.map_key(record.summary_id, 0))
    assert len(model.replies) == 3 and model.failed == 1
    expected = first.add(model.replies[1].usage).add(model.replies[2].usage)
    assert partial.usage == expected and partial.usage != model.replies[1].usage.add(model.replies[2].usage)
    # And the failing statement was withdrawn in the correction, never stored as verified
    assert all("$999.99" not in s.text for s in partial.statements)
