"""After a failed summary: the right next step, reduce levels keyed by their budget, and coverage
lines without pages for documents that have none (issue 28 follow-up)."""

from __future__ import annotations

from longdoc.cli.summarize import next_step
from longdoc.summarize import store
from longdoc.summarize.result import coverage_line


def test_reduce_levels_are_keyed_by_the_reduce_budget() -> None:
    # Given one summary, When its level-1 batch 0 is keyed for a 500- and a 1000-token reduce budget
    # Then the keys differ (a rerun with another budget recomputes the levels), and the map keys do not change
    assert store.reduce_key("sum-1", 1, 0, 500) == "summaries/sum-1/reduce/01-in500/00000.json"
    assert store.reduce_key("sum-1", 1, 0, 500) != store.reduce_key("sum-1", 1, 0, 1000)
    assert store.map_key("sum-1", 3) == "summaries/sum-1/map/00003.json"


def test_the_next_step_after_reduce_not_converging_is_a_larger_budget(monkeypatch) -> None:
    # Given a reduce budget of 800 tokens
    monkeypatch.setenv("LONGDOC_SUMMARY_REDUCE_INPUT_TOKENS", "800")
    # When the failure is ReduceNotConverging / Then the step doubles the budget, naming the current one
    step = next_step("ReduceNotConverging: summary sum-1: reduce cannot fit the 800-token input budget")
    assert step.startswith("rerun with a larger reduce budget, e.g. LONGDOC_SUMMARY_REDUCE_INPUT_TOKENS=1600 (now 800;")
    # And any other failure resumes
    assert next_step("ModelUnavailable: Claude API failed") == (
        "run the same command again to resume (finished groups are kept)")


def test_a_coverage_line_of_a_document_without_pages_names_sections_only() -> None:
    # Given a lost group of a .txt document (no pages) and one of a PDF
    cov = {"groups": 4, "groups_not_used": [
        {"group": 2, "sections": ["4", "4.1"], "page_start": None, "page_end": None, "reason": "ModelRefused: x"},
        {"group": 3, "sections": ["5"], "page_start": 7, "page_end": 8, "reason": "ModelRefused: y"}]}
    # When its coverage line is written / Then the first names sections only, the second its pages
    line = coverage_line(cov)
    assert "group 2 (sections 4, 4.1): ModelRefused: x" in line and "None" not in line
    assert "group 3 (sections 5; pages 7-8): ModelRefused: y" in line
