"""The fencing token of the run a process writes for: the generation of the run lease it holds.

A run's lease (:class:`~longdoc.core.records.RunLease`) says which process drives the run; its
``generation`` goes one up each time another process takes it over. Every checkpoint,
extraction and run-status write passes the generation its writer holds as ``fence``
(:class:`~longdoc.core.ports.StateStore`), so a process that stalled past its lease and comes
back after a takeover has its late writes refused (:class:`~longdoc.core.errors.RunLeaseLost`)
instead of overwriting the new holder's.

Which generation a write carries (:func:`run_fence`):

- inside :func:`holding` (the local engine wraps every task it runs for a run it leased), the
  generation that engine took, never re-read: a stale engine keeps its old one;
- otherwise the stored lease's generation at the time of the call (a session reads it once
  when it opens, so its later writes carry that one); None when the run has no lease (AWS:
  Step Functions drives the run, the writes are unfenced as before).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from longdoc.core.ports import StateStore

_HELD: ContextVar[tuple[str, int] | None] = ContextVar("longdoc_run_fence", default=None)


@contextmanager
def holding(run_id: str, generation: int) -> Iterator[None]:
    """Within the block (this thread or task), writes for ``run_id`` carry ``generation``."""
    token = _HELD.set((run_id, generation))
    try:
        yield
    finally:
        _HELD.reset(token)


def run_fence(state: StateStore, run_id: str) -> int | None:
    """The generation a write for ``run_id`` is fenced with now (see the module docstring), or None.

    One consistent read of the lease when no :func:`holding` block names the run. A lease with
    generation 0 (stored before generations existed) fences nothing (None).
    """
    held = _HELD.get()
    if held is not None and held[0] == run_id:
        return held[1]
    lease = state.get_run_lease(run_id)
    return lease.generation if lease is not None and lease.generation > 0 else None
