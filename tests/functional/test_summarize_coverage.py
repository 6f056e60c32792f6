"""The reduce contract and coverage (issue 28): every reduce call within its budget, a level that does
not shrink stopped with a clear error, lost groups named, partial summaries marked, empty ones failed.

``longdoc summarize`` runs as a user would (CLI, local engine, the real state machine and
handler, the real SDK) against the loopback Messages fake, answers computed by
:class:`tests.functional.summary_support.ClaudeShaped` and scripted where the test says.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.blob import LocalBlobStore
from longdoc.cli import main
from longdoc.core.tokens import estimate_tokens
from longdoc.summarize.levels import PARTIAL_OVERHEAD_TOKENS
from longdoc.summarize.prompt import parse_lines
from tests.fakes.anthropic_server import FakeAnthropic, enable_streaming, message_reply, tool_use_block
from tests.functional.summary_support import ClaudeShaped, add_policy, claude_home

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

BUDGET = 500
_PARTIAL = re.compile(r'<partial-[0-9a-f]+ part="\d+">\n(.*?)\n</partial-[0-9a-f]+>', re.DOTALL)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A local LONGDOC_HOME, Claude chosen (a fake key), small groups and a 500-token reduce budget."""
    yield claude_home(tmp_path, monkeypatch, claude_model="claude-sonnet-5-5", summary_map_concurrency="1",
                      summary_reduce_input_tokens=str(BUDGET))
    wiring.reset()


def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], shaped: ClaudeShaped
        ) -> tuple[int, dict[str, Any] | None, str, list[dict[str, Any]]]:
    fake = enable_streaming(FakeAnthropic(responder=shaped))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    wiring.reset()
    with fake:
        code = main(["summarize", "policy", "--json"])
        bodies = [r.body for r in fake.calls("POST", "/v1/messages")]
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err, bodies


def _inputs(body: dict[str, Any]) -> list[list[tuple[str, list[str]]]]:
    """The partial summaries a reduce or final request carries, as (text, sections) statements."""
    return [parse_lines(m.group(1)) for m in _PARTIAL.finditer(body["messages"][0]["content"])]


def _input_tokens(body: dict[str, Any]) -> int:
    """The request's partials measured as the reduce contract measures them."""
    lines = [line for line in body["messages"][0]["content"].splitlines() if line.startswith("- ")]
    return sum(estimate_tokens(line) + 1 for line in lines) + PARTIAL_OVERHEAD_TOKENS * len(_inputs(body))


def _echo_reduce(kind: str, body: dict[str, Any], content: list[dict[str, Any]]) -> Any:
    """A reduce answer that repeats every input statement (no condensing at all)."""
    if kind == "reduce":
        statements = [{"text": t, "sections": s} for partial in _inputs(body) for t, s in partial]
        return [tool_use_block("record_summary", {"statements": statements})]
    return content


def test_a_reduce_that_repeats_its_input_stops_with_a_clear_error_within_budget(home, monkeypatch, capsys) -> None:
    # Given a twelve-section policy and a model whose reduce answers repeat their input
    add_policy(home, sections=12)
    shaped = ClaudeShaped(_echo_reduce)
    # When it is summarised
    code, _, err, bodies = run(monkeypatch, capsys, shaped)
    # Then the run fails with the reduce contract's error, naming the budget and the totals that did not shrink
    assert code == 1
    assert "ReduceNotConverging" in err and "did not shrink" in err and f"{BUDGET}-token" in err, err
    # And it did not loop: two reduce levels at most (the level that did not shrink, then one pairwise level)
    levels = {p.parent.name for p in (home / "bucket" / "summaries").rglob("reduce/*/*.json") if "spent" not in p.parts}
    assert 1 <= len(levels) <= 2, levels
    # And every reduce call stayed within its input budget, and no final call was sent over it
    reduces = [b for b in bodies if "TASK (reduce)" in b["messages"][0]["content"]]
    assert reduces and max(_input_tokens(b) for b in reduces) <= BUDGET
    assert not any(b.get("stream") for b in bodies)
    print(f"echo reduce: {len(reduces)} reduce calls over {len(levels)} levels, largest input "
          f"{max(_input_tokens(b) for b in reduces)} tokens (budget {BUDGET})")


def _empty_first_reduce() -> Any:
    state = {"done": False}

    def tamper(kind: str, body: dict[str, Any], content: list[dict[str, Any]]) -> Any:
        if kind == "reduce" and not state["done"]:
            state["done"] = True
            return [tool_use_block("record_summary", {"statements": []})]
        return content

    return tamper


def test_a_reduce_batch_that_answers_nothing_makes_a_partial_summary_naming_its_sections(home, monkeypatch,
                                                                                        capsys) -> None:
    # Given a policy whose first reduce batch comes back with 0 statements
    add_policy(home, sections=12)
    # When it is summarised
    code, result, err, bodies = run(monkeypatch, capsys, ClaudeShaped(_empty_first_reduce()))
    assert code == 0 and result is not None, err
    # Then the result is partial, and its coverage names the groups, sections and pages that batch held
    cov = result["coverage"]
    assert result["partial"] is True and cov["groups_not_used"]
    assert cov["groups_used"] + len(cov["groups_not_used"]) == cov["groups"] == result["groups"]
    lost_sections = {s for g in cov["groups_not_used"] for s in g["sections"]}
    assert lost_sections == set(cov["sections_not_summarised"]) and cov["pages_not_summarised"]
    assert all("reduce call kept no verified statement" in g["reason"] for g in cov["groups_not_used"])
    # And no statement of the final summary cites a section that was not summarised
    assert not {c["section_id"] for s in result["statements"] for c in s["citations"]} & lost_sections
    # And the CLI says so on stderr
    assert "partial summary" in err and f"of {cov['groups']} groups not summarised" in err


def _refuse_section(section: str) -> Any:
    def tamper(kind: str, body: dict[str, Any], content: list[dict[str, Any]]) -> Any:
        if kind == "map" and f"section: {section} |" in body["messages"][0]["content"]:
            return message_reply([{"type": "text", "text": ""}], "refusal")
        return content

    return tamper


def test_a_group_the_model_always_refuses_gives_a_partial_summary_on_every_run(home, monkeypatch, capsys) -> None:
    # Given a model that refuses the group holding section 2, every time
    add_policy(home, sections=8)
    # When the policy is summarised
    code, result, err, _ = run(monkeypatch, capsys, ClaudeShaped(_refuse_section("2")))
    # Then the summary is partial (not failed), naming the refused group by its sections and pages
    assert code == 0 and result is not None, err
    missing = result["coverage"]["groups_not_used"]
    assert len(missing) == 1 and "2" in missing[0]["sections"] and missing[0]["page_start"] <= 2 <= missing[0]["page_end"]
    assert missing[0]["reason"].startswith("ModelRefused")
    assert result["statements"] and result["partial"] is True


def _no_statements(kind: str, body: dict[str, Any], content: list[dict[str, Any]]) -> Any:
    if kind in ("map", "reduce"):
        return [tool_use_block("record_summary", {"statements": []})]
    return content


def test_a_summary_with_no_statements_fails_with_a_non_zero_exit(home, monkeypatch, capsys) -> None:
    # Given a model whose every map call answers no statement
    add_policy(home, sections=8)
    # When the policy is summarised
    code, result, err, bodies = run(monkeypatch, capsys, ClaudeShaped(_no_statements))
    # Then the CLI fails (no SUCCEEDED empty summary), naming EmptySummary, and no final call was made
    assert code == 1 and result is None
    assert "EmptySummary" in err and "no group gave a verified statement" in err, err
    assert not any(b.get("stream") for b in bodies)
    summary_dir = next((home / "bucket" / "summaries").iterdir())
    record = json.loads((summary_dir / "record.json").read_text())
    assert record["status"] == "FAILED" and not (summary_dir / "result.json").exists()
    assert LocalBlobStore(home / "bucket").exists(f"summaries/{summary_dir.name}/plan.json")


WRONG = "$987,654.00"
"""An amount no section of the policy states: a statement with it fails the checks."""


def _every_statement_wrong(kind: str, body: dict[str, Any], content: list[dict[str, Any]]) -> Any:
    """Every map call and correction answers one statement with an amount its section does not state."""
    if kind in ("map", "correction"):
        section = re.search(r"section: (\d+) \|", body["messages"][0]["content"])
        cited = section.group(1) if section else "1"
        return [tool_use_block("record_summary", {"statements": [
            {"text": f"The deductible of section {cited} is {WRONG} per claim.", "sections": [cited]}]})]
    return content


def test_a_summary_whose_every_statement_fails_the_checks_is_failed_with_the_dropped_list(
        home, monkeypatch, capsys) -> None:
    from longdoc.mcpserver.args import SummaryIdArgs
    from longdoc.mcpserver.tools import get_summary
    from longdoc.summarize.runs import summary_view

    # Given a model whose every statement cites an amount its section does not state, corrections too
    add_policy(home, sections=8)
    # When the policy is summarised
    code, result, err, _ = run(monkeypatch, capsys, ClaudeShaped(_every_statement_wrong))
    # Then the CLI fails (exit 1, no SUCCEEDED summary with 0 statements), naming EmptySummary,
    # and lists each dropped statement with its reason
    assert code == 1 and result is None
    assert "EmptySummary" in err and "no group gave a verified statement" in err, err
    dropped_lines = [line for line in err.splitlines() if line.startswith("dropped: ")]
    assert dropped_lines and all(WRONG in line and "still failing" in line for line in dropped_lines), err
    # And the status the API and the MCP tool read is FAILED with the reason and the dropped list
    summary_id = next((home / "bucket" / "summaries").iterdir()).name
    view = summary_view(LocalBlobStore(home / "bucket"), summary_id)
    assert view["status"] == "FAILED" and view["error"] == "EmptySummary"
    assert "no group gave a verified statement" in view["cause"]
    assert len(view["dropped"]) == len(dropped_lines)
    assert sorted(d["stage"] for d in view["dropped"]) == ["map 0", "map 1", "map 2", "map 3"]  # one per group
    assert all(WRONG in d["text"] and d["reason"] for d in view["dropped"])
    tool = get_summary(SummaryIdArgs(summary_id=summary_id))
    assert (tool["status"], tool["done"], tool["dropped"]) == ("FAILED", True, view["dropped"])


def test_after_reduce_not_converging_the_hint_is_a_larger_budget_and_a_rerun_with_it_recomputes(
        home, monkeypatch, capsys) -> None:
    from tests.functional.summary_support import kind_of

    # Given a twelve-section policy and a model whose reduce answers repeat their input (500-token budget)
    add_policy(home, sections=12)
    code, _, err, first = run(monkeypatch, capsys, ClaudeShaped(_echo_reduce))
    # When the summary fails with ReduceNotConverging
    assert code == 1 and "ReduceNotConverging" in err, err
    # Then the next step is a larger reduce budget or a stronger model, not "run the same command again"
    assert f"next: rerun with a larger reduce budget, e.g. LONGDOC_SUMMARY_REDUCE_INPUT_TOKENS={2 * BUDGET}" in err
    assert f"(now {BUDGET};" in err and "LONGDOC_CLAUDE_MODEL" in err and "run the same command again" not in err
    maps = sum(1 for b in first if kind_of(b) == "map")
    # And when the user follows it (a budget the map partials fit in)
    monkeypatch.setenv("LONGDOC_SUMMARY_REDUCE_INPUT_TOKENS", "20000")
    code, result, err, second = run(monkeypatch, capsys, ClaudeShaped(_echo_reduce))
    # Then the rerun recomputes: it calls the model again (the final call), keeps the map partials, and succeeds
    assert code == 0 and result is not None, err
    kinds = [kind_of(b) for b in second]
    assert maps > 0 and "map" not in kinds and "final" in kinds
    # And the stored record names the summarize state machine, not the extract one
    record = json.loads((home / "bucket" / "summaries" / result["summary_id"] / "record.json").read_text())
    assert ":stateMachine:longdoc-local-summarize-" in record["execution_arn"] or (
        ":execution:longdoc-local-summarize-" in record["execution_arn"]), record["execution_arn"]
