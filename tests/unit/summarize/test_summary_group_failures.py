"""A map group that fails for good (issue 28): a persistent 5xx is recorded as a lost group after
the state machine's retries instead of failing the summary on every rerun."""

from __future__ import annotations

from pathlib import Path

import pytest

from longdoc.adapters.blob import LocalBlobStore
from longdoc.config import SummarizeSettings
from longdoc.core.documents import chunks_key
from longdoc.core.errors import ModelUnavailable
from longdoc.core.messages import ModelRequest, ModelResponse
from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse import parse_document
from longdoc.summarize import steps, store
from longdoc.summarize.models import SummaryRecord, SummaryRequest
from longdoc.summarize.result import coverage

TEXT = "\n\n".join(f"{n}. Topic {n}\n\n" + f"The Supplier shall pay EUR {n},000.00 within {n + 3} days. " * 40
                   for n in range(1, 5))


class Down:
    """A model whose every call is a 500 (the adapter's ModelUnavailable)."""

    name = "claude-sonnet-5-5"

    def __init__(self) -> None:
        self.calls = 0

    def create(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        raise ModelUnavailable("500 internal_server_error: scripted")

    def stream(self, request: ModelRequest, on_text) -> ModelResponse:  # pragma: no cover - not reached
        raise ModelUnavailable("500")


@pytest.fixture
def deps(tmp_path: Path) -> steps.SummaryDeps:
    blobs = LocalBlobStore(tmp_path / "bucket")
    chunks = chunk_document(parse_document("c.txt", TEXT.encode()), "doc")
    version = chunks[0].doc_version
    blobs.put(chunks_key("doc", version), "".join(c.model_dump_json() + "\n" for c in chunks).encode())
    store.save_record(blobs, SummaryRecord(summary_id="sum-1", doc_id="doc", doc_version=version,
                                           request=SummaryRequest(doc_id="doc")))
    settings = SummarizeSettings(summary_single_call_tokens=1000, summary_group_min_tokens=100,
                                 summary_group_max_tokens=400)
    return steps.SummaryDeps(blobs=blobs, model=Down(), settings=settings)


def test_a_persistent_5xx_is_retried_then_recorded_as_a_lost_group(deps: steps.SummaryDeps) -> None:
    # Given a planned map summary and a model that answers 500 every time
    planned = steps.plan(deps, "sum-1")
    assert planned["mode"] == "map"
    # When group 0 is attempted as often as the state machine retries it (1 + 5)
    for _ in range(steps.GROUP_FAILURE_LIMIT - 1):
        with pytest.raises(ModelUnavailable):  # retried by the state machine's ModelUnavailable rule
            steps.map_group(deps, "sum-1", 0)
    done = steps.map_group(deps, "sum-1", 0)
    # Then the last attempt stores the group as lost, with the error, instead of failing the run again
    assert done["statements"] == 0 and done["failed"].startswith("ModelUnavailable: 500")
    partial = store.load_partial(deps.blobs, store.map_key("sum-1", 0))
    assert partial.lost == [0] and partial.groups == [] and partial.statements == []
    # And a rerun reads the stored partial (no new call), and the coverage names the group's sections and pages
    calls = deps.model.calls  # type: ignore[attr-defined]
    assert steps.map_group(deps, "sum-1", 0)["cached"] is True and deps.model.calls == calls  # type: ignore[attr-defined]
    the_plan = store.load_plan(deps.blobs, "sum-1")
    cov = coverage(the_plan, [partial])
    assert cov["groups_not_used"][0]["group"] == 0
    assert cov["groups_not_used"][0]["sections"] == the_plan.groups[0].section_ids
    assert cov["groups_not_used"][0]["reason"].startswith("ModelUnavailable")
