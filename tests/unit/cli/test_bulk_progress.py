"""``longdoc bulk``'s progress on stderr: a tqdm bar on a terminal; on a pipe or a log,
a plain line only when the counts change, at most one per interval, and the final counts once."""

from __future__ import annotations

from longdoc.cli.bulk import Progress
from tests.unit.cli.progress_support import Clock, Stream




def counts(done: int, pending: int, round_: int = 0, in_flight: int = 1) -> dict[str, int]:
    return {"done": done, "failed": 0, "pending": pending, "round": round_, "in_flight": in_flight}




def test_off_a_terminal_a_line_only_when_the_counts_change_and_the_interval_has_passed() -> None:
    # Given a log file (not a terminal) and a watcher polling every half second
    err, clock = Stream(tty=False), Clock()
    shown = Progress(err, every=10, clock=clock)
    # When the counts stay the same for a minute of polls
    for _ in range(120):
        shown.update(counts(0, 4))
        clock.now += 0.5
    # Then one line was printed, not 120
    assert err.getvalue() == "bulk progress: 0 done, 0 failed, 4 pending; round 0, 1 batches in flight\n"
    # When the counts change twice within 10 s, then again after 10 s
    shown.update(counts(1, 3))
    clock.now += 3
    shown.update(counts(2, 2))
    clock.now += 10
    shown.update(counts(3, 1))
    lines = err.getvalue().splitlines()
    # Then the first change is printed at once (a minute had passed), the second not (3 s later), the third is
    assert [line.split(":")[1].split(";")[0].strip() for line in lines] == [
        "0 done, 0 failed, 4 pending", "1 done, 0 failed, 3 pending", "3 done, 0 failed, 1 pending"]
    assert not any("\r" in line or "[" in line for line in lines)  # no bar, no carriage return
    # And the end prints the final counts once, not again when they were already shown
    shown.close(counts(4, 0, 1, 0))
    shown.close(counts(4, 0, 1, 0))
    assert err.getvalue().splitlines()[-1] == "bulk progress: 4 done, 0 failed, 0 pending; round 1, 0 batches in flight"
    assert len(err.getvalue().splitlines()) == 4


def test_on_a_terminal_a_bar_of_documents_finished_with_the_round_and_batches_after_it() -> None:
    # Given a terminal
    err, clock = Stream(tty=True), Clock()
    shown = Progress(err, every=10, clock=clock)
    # When the counts change at every poll, with repeats in between
    for done in (0, 0, 1, 2, 2, 4):
        shown.update(counts(done, 4 - done))
        clock.now += 0.5
    shown.close(counts(4, 0, 1, 0))
    frames = err.getvalue().split("\r")[1:]
    # Then a tqdm bar counts the documents finished of the job's (no interval on a terminal)
    assert any("bulk" in f and "0/4" in f for f in frames)
    assert "\n" not in "".join(frames[:-1])
    # And the end draws the full bar with the rate, the failed count, round and batches, and ends the line
    last = frames[-1]
    assert "4/4" in last and "documents/s" in last and "0 failed; round 1, 0 batches" in last
    assert last.endswith("\n")
