"""Progress of long work: the port domain code reports through, and the reporter in use.

Domain code (parsing, chunking, embedding, indexing, summary map calls, bulk and eval loops)
says what it is doing through a :class:`ProgressReporter` and never draws anything itself;
the command line wires a reporter that writes to stderr (:mod:`longdoc.cli.progress`).
Everywhere else (Lambda handlers, the API server, tests that set none) the reporter is
:class:`NoProgress`, which does nothing.

A *stage* is named by a line of text that says what and of what (``"parse policy.pdf"``,
``"summarise policy: groups"``); it has a ``total`` (None when unknown) and a ``unit``
(``"pages"``, ``"chunks"``, ``"groups"``, ``"documents"``). A stage may be advanced from
several calls of a step function (the summary's map calls each advance ``groups``): the
reporter keeps the stage open by its name until :meth:`ProgressReporter.finish`, or until
the reporter itself is closed.

The reporter in use is one per process (:func:`reporting` sets it), not per thread: the
local Step Functions engine runs map states on worker threads, and their progress belongs
to the command that started them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol


class ProgressReporter(Protocol):
    """Where domain code reports progress (the port). Every method returns at once and never raises."""

    def start(self, stage: str, total: int | None, unit: str) -> None:
        """Open ``stage`` (``total`` items of ``unit``, None when unknown); opening an open stage
        again only updates its total."""

    def resize(self, stage: str, total: int | None, unit: str) -> None:
        """Set an open stage's ``total`` and ``unit`` once the work is known (a PDF's page count); nothing
        for a stage not open, so code that may run inside a stage reports only when it does."""

    def advance(self, stage: str, count: int = 1) -> None:
        """``count`` more items of ``stage`` are done; nothing for a stage not open."""

    def finish(self, stage: str, ok: bool = True) -> None:
        """``stage`` ended (``ok=False``: it stopped on an error); finishing a stage not open does nothing."""

    def close(self) -> None:
        """Finish every open stage as stopped (the command ends)."""


class NoProgress:
    """The reporter that reports nothing: Lambda handlers, the API server, library use."""

    def start(self, stage: str, total: int | None, unit: str) -> None:
        """Nothing."""

    def resize(self, stage: str, total: int | None, unit: str) -> None:
        """Nothing."""

    def advance(self, stage: str, count: int = 1) -> None:
        """Nothing."""

    def finish(self, stage: str, ok: bool = True) -> None:
        """Nothing."""

    def close(self) -> None:
        """Nothing."""


_lock = threading.Lock()
_current: ProgressReporter = NoProgress()


def reporter() -> ProgressReporter:
    """The reporter in use (:class:`NoProgress` unless a command set one with :func:`reporting`)."""
    return _current


@contextmanager
def reporting(chosen: ProgressReporter) -> Iterator[ProgressReporter]:
    """Use ``chosen`` as the process's reporter inside the block; on leaving it, close it (open
    stages are shown as stopped) and put the previous reporter back."""
    global _current
    with _lock:
        previous, _current = _current, chosen
    try:
        yield chosen
    finally:
        try:
            chosen.close()
        finally:
            with _lock:
                _current = previous


@contextmanager
def stage(name: str, total: int | None, unit: str) -> Iterator[Callable[[int], None]]:
    """Report one stage of work done inside the block: opened with ``total`` items of ``unit``,
    finished when the block ends (as stopped when it raises). Yields ``advance(count)``."""
    progress = reporter()
    progress.start(name, total, unit)

    def advance(count: int = 1) -> None:
        progress.advance(name, count)

    try:
        yield advance
    except BaseException:
        progress.finish(name, ok=False)
        raise
    progress.finish(name)
