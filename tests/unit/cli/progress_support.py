"""Stand-ins shared by the progress tests: a stream that says whether it is a terminal, and a hand clock."""

from __future__ import annotations

import io


class Stream(io.StringIO):
    """A text stream that says whether it is a terminal."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class Clock:
    """A clock the test moves by hand (``clock.now += 0.5``); seconds from ``start``."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now
