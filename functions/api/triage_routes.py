"""``POST /triage``: one claim against the wording in force of a policy set, answered synchronously.

A Powertools :class:`Router` included by ``app.py`` (its error handlers apply: a
:class:`~longdoc.core.errors.TriageError` is a 400 with its one-line message, an unknown
collection a 404, a malformed body a 400 naming the fields). The body is
:class:`~longdoc.triage.service.TriageRequest` (the CLI's flags: ``collection``, ``claim`` as a
JSON object or text, ``loss_date``, ``line_of_business``, ``budget_tokens`` or ``cost_line``,
``examples``); the answer is :func:`~longdoc.triage.service.run_triage`'s JSON. The API function
has no embedding or index settings, so ranking here is BM25 over the documents in force
(``"ranking": "bm25"`` in the answer); the model is Claude unless the baseline is configured.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import Router

from longdoc import wiring
from longdoc.triage.service import TriageRequest, run_triage

router = Router()


@router.post("/triage")
def triage(body: TriageRequest) -> dict[str, Any]:
    """Triage one claim: decision, reasons, verified citations, the clause band and the budget bands."""
    return run_triage(body, wiring.triage_deps(offline_ranking=True))
