"""One Claude budget across jobs (issue 26): admission control for executions and a bound on
synchronous calls.

:class:`Admission` is the check ``POST /extractions`` has always made, shared by ``POST /summaries``
and ``POST /bulk-extractions``: running executions of the state machine are counted (Step
Functions ``ListExecutions``, one page) and a new one is refused with :class:`TooManyRuns`
(HTTP 429 with ``Retry-After``) at the cap. :func:`bounded_slot` bounds a synchronous route
(``POST /triage``) across every API function instance: ``slots`` slot items in the state store,
each taken with the run lease's conditional write (:meth:`~longdoc.core.ports.StateStore.acquire_run_lease`
on the id ``<name>-slot-<n>``) for at most ``ttl_seconds`` and released at the end; with every
slot held the call is refused with :class:`TooManyRuns`. A slot whose holder died frees itself
when its lease ends (``ttl_seconds``: the API's 29 s integration timeout plus a margin).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from longdoc.core.errors import TooManyRuns
from longdoc.core.ports import StateStore


@dataclass(frozen=True)
class Admission:
    """Admission control before a run starts: ``count_running(cap)`` counts running executions
    (up to ``cap``); at ``cap`` a new run is refused with :class:`TooManyRuns` naming ``what``."""

    count_running: Callable[[int], int]
    cap: int
    retry_after_seconds: int = 60
    what: str = "extraction runs"

    def check(self) -> None:
        """Raise :class:`TooManyRuns` (``cap``, ``retry_after_seconds``) when ``cap`` executions are running."""
        if self.count_running(self.cap) >= self.cap:
            raise TooManyRuns(self.cap, self.retry_after_seconds, self.what)


def admission_of(starter: object, cap: int | None, retry_after_seconds: int, what: str) -> Admission | None:
    """The :class:`Admission` of a state machine's starter: None when ``cap`` is None or the starter
    cannot count its running executions (a local starter: local mode admits every run)."""
    count = getattr(starter, "count_running", None)
    if cap is None or count is None:
        return None
    return Admission(count_running=count, cap=cap, retry_after_seconds=retry_after_seconds, what=what)


SLOT_TTL_SECONDS = 45.0
"""How long a synchronous slot is held at most: API Gateway's 29 s REST integration timeout
(https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html) plus a margin."""


@contextmanager
def bounded_slot(state: StateStore, name: str, slots: int | None, *, retry_after_seconds: int = 10,
                 ttl_seconds: float = SLOT_TTL_SECONDS) -> Iterator[str | None]:
    """Hold one of ``slots`` slots named ``name`` while the block runs (None: no bound, nothing stored).

    Yields the slot id held. Slots are tried in a random order (no hot first slot); raises
    :class:`TooManyRuns` (``what`` = ``"<name> calls"``) when every one is held by a live lease.
    The slot is released when the block ends, also on error."""
    if slots is None:
        yield None
        return
    owner = f"{name}:{uuid.uuid4().hex}"
    order = list(range(slots))
    random.shuffle(order)
    held = next((f"{name}-slot-{n}" for n in order
                 if state.acquire_run_lease(f"{name}-slot-{n}", owner, ttl_seconds)), None)
    if held is None:
        raise TooManyRuns(slots, retry_after_seconds, f"{name} calls")
    try:
        yield held
    finally:
        state.release_run_lease(held, owner)
