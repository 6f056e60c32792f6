"""Progress of long commands on stderr: the command line's :class:`~longdoc.core.progress.ProgressReporter`.

``longdoc ingest``, ``watch``, ``summarize``, ``bulk`` and ``eval`` report through it
(:func:`longdoc.cli.main` wires it for them; stdout, and so ``--json`` output, never carries progress):

* stderr a terminal: one tqdm bar per open stage (done/total, rate, elapsed and ETA), redrawn
  at least every :data:`REFRESH_SECONDS` even while no item completes (a long chunking pass, a
  slow model call), so a long stage never looks stuck;
* otherwise (a pipe, a log file, CI): one line per stage when it ends, ``longdoc: parse
  policy.pdf: 13 pages in 1.2 s (10.8 pages/s)``.

A stage that stops on an error shows nothing more (its bar is cleared): the command's own error
line names the file and the problem.

tqdm (https://tqdm.github.io/) draws the bars; it is in the ``local`` extra. Without it, a
terminal gets the plain lines.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

DEFAULT_SIZE = (100, 24)
"""Columns and lines assumed when the terminal does not say its own."""

REFRESH_SECONDS = 1.0
"""Seconds between redraws of the open bars on a terminal (the elapsed time and rate move on)."""


@dataclass
class _Stage:
    total: int | None
    unit: str
    started: float
    done: int = 0
    bar: Any = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class StderrProgress:
    """Progress bars (terminal) or one line per stage (otherwise) on ``err``; thread-safe.

    ``tty`` overrides ``err.isatty()``; ``clock`` gives seconds (monotonic) for the lines' times and rates.
    """

    def __init__(self, err: TextIO, *, tty: bool | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.err, self.clock = err, clock
        self.tty = err.isatty() if tty is None else tty
        if self.tty and importlib.util.find_spec("tqdm") is None:  # the `local` extra not installed
            self.tty = False
        self._stages: dict[str, _Stage] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def _size(self) -> tuple[int, int]:
        """The terminal's columns and lines; :data:`DEFAULT_SIZE` for what it does not report (a new
        pseudo-terminal says 0 x 0, and tqdm hides every bar of a 0-line screen)."""
        try:
            size = os.get_terminal_size(self.err.fileno())
        except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is an OSError
            return DEFAULT_SIZE
        return size.columns or DEFAULT_SIZE[0], size.lines or DEFAULT_SIZE[1]

    def _bar(self, name: str, stage: _Stage) -> Any:
        from tqdm import tqdm

        columns, lines = self._size()
        return tqdm(total=stage.total, desc=name, unit=" " + stage.unit, file=self.err, leave=True,
                          mininterval=0.2, ncols=columns, nrows=lines, unit_scale=False)

    def _tick(self) -> None:
        while not self._stop.wait(REFRESH_SECONDS):
            with self._lock:
                bars = [s.bar for s in self._stages.values() if s.bar is not None]
            for bar in bars:
                bar.refresh()

    def start(self, stage: str, total: int | None, unit: str) -> None:
        """Open ``stage`` (see :meth:`longdoc.core.progress.ProgressReporter.start`)."""
        with self._lock:
            known = self._stages.get(stage)
            if known is not None:
                if total is not None and known.total != total:
                    known.total = total
                    if known.bar is not None:
                        known.bar.total = total
                return
            opened = self._stages[stage] = _Stage(total, unit, self.clock())
            if self.tty:
                opened.bar = self._bar(stage, opened)
                if self._ticker is None:
                    self._ticker = threading.Thread(target=self._tick, name="longdoc-progress", daemon=True)
                    self._ticker.start()

    def resize(self, stage: str, total: int | None, unit: str) -> None:
        """Set an open stage's total and unit (nothing for a stage not open)."""
        opened = self._stages.get(stage)
        if opened is None:
            return
        with opened.lock:
            opened.total, opened.unit = total, unit
            if opened.bar is not None:
                opened.bar.total, opened.bar.unit = total, " " + unit
                opened.bar.refresh()

    def advance(self, stage: str, count: int = 1) -> None:
        """Count ``count`` more items of ``stage`` done (nothing for a stage not open)."""
        opened = self._stages.get(stage)
        if opened is None:
            return
        with opened.lock:
            opened.done += count
            if opened.bar is not None:
                opened.bar.update(count)

    def finish(self, stage: str, ok: bool = True) -> None:
        """End ``stage``: close its bar, or write its one line."""
        with self._lock:
            opened = self._stages.pop(stage, None)
        if opened is None:
            return
        if opened.bar is not None:
            opened.bar.leave = ok  # a stage that stopped is cleared: the command's error line says why
            opened.bar.close()
        elif ok:
            took = self.clock() - opened.started
            self.err.write(f"longdoc: {stage}: {stage_line(opened.done, opened.unit, took)}\n")
            self.err.flush()

    def write(self, line: str) -> None:
        """Print one line on ``err`` without breaking the bars (above them on a terminal)."""
        if self.tty:
            from tqdm import tqdm

            tqdm.write(line, file=self.err)
        else:
            self.err.write(line + "\n")
            self.err.flush()

    def note(self, stage: str, text: str) -> None:
        """Show ``text`` after an open stage's counts on a terminal (``round 2, 3 batches in flight``)."""
        opened = self._stages.get(stage)
        if opened is not None and opened.bar is not None:
            opened.bar.set_postfix_str(text, refresh=False)

    def close(self) -> None:
        """Finish every open stage as stopped (cleared, no line) and stop redrawing."""
        for name in list(self._stages):
            self.finish(name, ok=False)
        self._stop.set()


def stage_line(done: int, unit: str, seconds: float) -> str:
    """``13 pages in 1.2 s (10.8 pages/s)``: a finished stage's line."""
    rate = f" ({done / seconds:.1f} {unit}/s)" if seconds > 0 and done else ""
    return f"{done} {unit} in {seconds:.1f} s{rate}"
