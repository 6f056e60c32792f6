"""Issue 26: the shared Claude budget's checks (:mod:`longdoc.core.admission`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from longdoc.adapters.state import SqliteStateStore
from longdoc.core.admission import Admission, admission_of, bounded_slot
from longdoc.core.errors import TooManyRuns


def test_triage_slots_bound_concurrent_calls_across_processes_and_free_on_exit(tmp_path: Path) -> None:
    # Given a store shared by every API instance and a bound of 2 triage calls
    state = SqliteStateStore(tmp_path / "state.sqlite3")
    # When two calls hold a slot and a third arrives
    with bounded_slot(state, "triage", 2) as first, bounded_slot(state, "triage", 2) as second:
        assert {first, second} == {"triage-slot-0", "triage-slot-1"}
        with pytest.raises(TooManyRuns, match="2 triage calls are running") as refused, \
                bounded_slot(state, "triage", 2, retry_after_seconds=7):
            pytest.fail("a third call ran")
        # Then it is refused with the Retry-After seconds the API answers
        assert refused.value.retry_after_seconds == 7
    # And once they ended (also by an error) the slots are free again
    with pytest.raises(RuntimeError), bounded_slot(state, "triage", 2):
        raise RuntimeError("model failed")
    with bounded_slot(state, "triage", 1) as again:
        assert again == "triage-slot-0"


def test_a_slot_whose_holder_died_frees_itself_after_its_ttl(tmp_path: Path) -> None:
    # Given a slot taken by a holder that never released it (its lease lasts 0.05 s)
    state = SqliteStateStore(tmp_path / "state.sqlite3")
    assert state.acquire_run_lease("triage-slot-0", "triage:dead", 0.05)
    import time

    time.sleep(0.1)
    # When the next call comes / Then it gets the slot
    with bounded_slot(state, "triage", 1) as slot:
        assert slot == "triage-slot-0"


def test_no_bound_stores_nothing_and_admission_needs_a_cap_and_a_counting_starter(tmp_path: Path) -> None:
    state = SqliteStateStore(tmp_path / "state.sqlite3")
    with bounded_slot(state, "triage", None) as slot:
        assert slot is None
    assert state.get_run_lease("triage-slot-0") is None

    class Counting:
        def count_running(self, cap: int) -> int:
            return cap

    assert admission_of(object(), 1, 60, "bulk jobs") is None  # a local starter counts nothing
    assert admission_of(Counting(), None, 60, "bulk jobs") is None
    made = admission_of(Counting(), 1, 60, "summaries")
    assert isinstance(made, Admission)
    with pytest.raises(TooManyRuns, match="1 summaries are running"):
        made.check()
