"""Progress on stderr (:mod:`longdoc.cli.progress`) through the domain's port (:mod:`longdoc.core.progress`):
one line per finished stage off a terminal, tqdm bars on one, nothing where no command wired a reporter."""

from __future__ import annotations

import pytest

from longdoc.cli.progress import StderrProgress
from longdoc.core.progress import NoProgress, reporter, reporting, stage
from tests.unit.cli.progress_support import Clock, Stream






def test_off_a_terminal_each_finished_stage_is_one_line_with_its_count_time_and_rate() -> None:
    err, clock = Stream(tty=False), Clock(start=100.0)
    with reporting(StderrProgress(err, clock=clock)):
        with stage("parse policy.pdf", None, "pages") as advance:
            reporter().resize("parse policy.pdf", 13, "pages")  # the parser learns the page count
            for _ in range(13):
                advance(1)
                clock.now += 0.1
        with stage("embed policy.pdf", 40, "chunks") as advance:
            advance(40)
            clock.now += 8
    assert err.getvalue().splitlines() == ["longdoc: parse policy.pdf: 13 pages in 1.3 s (10.0 pages/s)",
                                           "longdoc: embed policy.pdf: 40 chunks in 8.0 s (5.0 chunks/s)"]


def test_a_stage_that_fails_adds_no_line_and_the_reporter_is_put_back() -> None:
    err = Stream(tty=False)
    with reporting(StderrProgress(err)) as shown:
        assert reporter() is shown
        with pytest.raises(ValueError), stage("parse bad.txt", 1, "files"):
            raise ValueError("no text")
        reporter().start("summarise policy.pdf", 3, "groups")  # never finished: closed with the command
    assert err.getvalue() == ""
    assert isinstance(reporter(), NoProgress)


def test_code_outside_an_open_stage_reports_nothing() -> None:
    # parse_document and chunk_document count pages and passes only inside an ingest's stages
    err = Stream(tty=False)
    with reporting(StderrProgress(err)):
        reporter().resize("parse other.pdf", 4, "pages")
        reporter().advance("parse other.pdf", 4)
        reporter().finish("parse other.pdf")
    assert err.getvalue() == ""


def test_on_a_terminal_a_bar_shows_the_counts_rate_and_eta() -> None:
    err = Stream(tty=True)
    with reporting(StderrProgress(err)), stage("embed policy.pdf", 10, "chunks") as advance:
        advance(4)
        reporter().advance("embed policy.pdf", 6)
    frames = err.getvalue().split("\r")
    assert any("embed policy.pdf" in f and "0/10" in f for f in frames)  # drawn when opened
    assert "10/10" in frames[-1] and "chunks/s" in frames[-1] and frames[-1].endswith("\n")
    assert any("<" in f and "]" in f for f in frames)  # elapsed<remaining: tqdm's ETA


def test_without_a_command_nothing_is_reported() -> None:
    # Lambda handlers and the API server never wire a reporter
    assert isinstance(reporter(), NoProgress)
    with stage("parse x.pdf", 1, "pages") as advance:
        advance(1)
