"""The public surface of ``extract``: what ``bulk`` (and any other stage) may use of it.

Everything else in ``longdoc.extract`` is internal and may move without notice; a stage
building on extraction imports from here only (a rule in ``tests/infrastructure/test_import_graph.py``).

* runs: :func:`start_run` starts a run, :func:`run_result` reads its result,
  :func:`record_failure` records a failed one; :class:`Catalogue` is the clause-type catalogue;
* one session, step by step (as the bulk rounds drive it): :class:`Deps` (the stores and models),
  :class:`SessionOptions`, :class:`Session`, :func:`open_session`, :func:`start_turn`,
  :func:`first_request`, :func:`apply_response`, :func:`finish_session`, and
  :data:`MAX_CALLS_PER_SESSION` (model turns per session);
* citations: :func:`verify_citation` (the verbatim check a reviewer's correction goes through too).
"""

from __future__ import annotations

from longdoc.extract.catalogue import Catalogue
from longdoc.extract.citations import verify_citation
from longdoc.extract.runs import record_failure, run_result, start_run
from longdoc.extract.session import apply_response, finish_session, first_request, open_session, start_turn
from longdoc.extract.session_types import MAX_CALLS_PER_SESSION, Deps, Session, SessionOptions

__all__ = [
    "MAX_CALLS_PER_SESSION",
    "Catalogue",
    "Deps",
    "Session",
    "SessionOptions",
    "apply_response",
    "finish_session",
    "first_request",
    "open_session",
    "record_failure",
    "run_result",
    "start_run",
    "start_turn",
    "verify_citation",
]
