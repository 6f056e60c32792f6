"""``POST /triage``: one claim against the wording in force of a policy set, answered synchronously.

A Powertools :class:`Router` included by ``app.py`` (its error handlers apply: a
:class:`~longdoc.core.errors.TriageError` is a 400 with its one-line message, an unknown
collection a 404, a malformed body a 400 naming the fields). The body is
:class:`TriageBody` (the CLI's flags: ``collection``, ``claim`` as a JSON object or text,
``loss_date``, ``line_of_business``, ``budget_tokens`` or ``cost_line``, ``examples``); the
answer is :func:`~longdoc.triage.service.run_triage`'s JSON. The API function has no embedding
or index settings, so ranking here is BM25 over the documents in force (``"ranking": "bm25"``
in the answer); with the stack's ``Reranker=voyage`` the first 60 are then reranked by Voyage
(``"bm25, reranked"``), bounded to about 13 s (:func:`longdoc.wiring.reranker` ``interactive``); a
failed rerank leaves the BM25 order with a ``warnings`` line. The model is Claude unless the
baseline is configured.

Issue 26, one Claude budget: a triage stays synchronous (one model call, answered inside the
29 s) but at most ``LONGDOC_MAX_CONCURRENT_TRIAGE`` run at once across every API instance
(:func:`longdoc.core.admission.bounded_slot`: slot items in the state store); past it 429 with
``Retry-After``. Bounds per item: the claim at most :data:`~longdoc.triage.claim.MAX_CLAIM_BYTES`
bytes of UTF-8 (its text, or the JSON object's encoding: the CLI's claim-file cap, so a claim the
CLI takes is taken here too) and :data:`CLAIM_MAX_FIELDS` fields.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import model_validator

from longdoc import wiring
from longdoc.config import ApiFunctionSettings, function_settings
from longdoc.core.admission import bounded_slot
from longdoc.triage.claim import MAX_CLAIM_BYTES
from longdoc.triage.service import TriageRequest, run_triage

router = Router()

CLAIM_MAX_FIELDS = 200
"""Most top-level fields of a claim given as a JSON object."""


class TriageBody(TriageRequest):
    """:class:`~longdoc.triage.service.TriageRequest` with the API's per-item bounds on the claim."""

    @model_validator(mode="after")
    def _claim_bounds(self) -> "TriageBody":
        text = self.claim if isinstance(self.claim, str) else json.dumps(self.claim, ensure_ascii=False)
        size = len(text.encode("utf-8"))
        if size > MAX_CLAIM_BYTES:
            raise ValueError(f"claim is {size} bytes of UTF-8; at most {MAX_CLAIM_BYTES}")
        if isinstance(self.claim, dict) and len(self.claim) > CLAIM_MAX_FIELDS:
            raise ValueError(f"claim has {len(self.claim)} fields; at most {CLAIM_MAX_FIELDS}")
        return self


@router.post("/triage")
def triage(body: TriageBody) -> dict[str, Any]:
    """Triage one claim: decision, reasons, verified citations, the clause band and the budget bands."""
    settings = function_settings(ApiFunctionSettings)
    with bounded_slot(wiring.state_store(), "triage", settings.max_concurrent_triage,
                      retry_after_seconds=min(settings.retry_after_seconds, 30)):
        return run_triage(body, wiring.triage_deps(offline_ranking=True, interactive=True))
