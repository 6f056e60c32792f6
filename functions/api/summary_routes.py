"""Summary routes of the API: ``POST /summaries`` (202 with the summary id) and ``GET /summaries/{summary_id}``.

A Powertools ``Router`` included by ``app.py`` (one ``include_router`` line), so the routes
share the app's validation and its domain-error mapping (404 unknown document or summary,
400 a document that is not READY or has no text, a focus over 300 characters). Thin: each
route calls one service function (:func:`longdoc.summarize.runs.start_summary`,
:func:`longdoc.summarize.runs.summary_view`).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from pydantic import Field

from longdoc import wiring
from longdoc.config import SummaryApiSettings, function_settings
from longdoc.core.admission import admission_of
from longdoc.summarize.baseline import summary_model_name
from longdoc.summarize.models import SummaryRequest
from longdoc.summarize.runs import start_summary, summary_view

router = APIGatewayRouter()


class SummaryBody(SummaryRequest):
    """Body of ``POST /summaries``: ``{"doc_id", "doc_version"?, "focus"?, "length"?: short|medium|long}``."""

    focus: str | None = Field(None, max_length=300, description="a topic to stick to, e.g. \"exclusions\"")


@router.post("/summaries")
def create_summary(body: SummaryBody) -> Response[dict[str, Any]]:
    """Start a summary (or return the stored one): 202 with ``summary_id``, ``status`` and ``execution_arn``.

    The id is derived from the document version, focus, length and model, so repeating a
    request starts nothing new, and repeating a FAILED one resumes it. A new summary is answered
    429 with ``Retry-After`` while ``max_running_summaries`` summaries run (issue 26).
    """
    settings = function_settings(SummaryApiSettings)
    starter = wiring.execution_starter("summarize")
    record = start_summary(body, state=wiring.state_store(), blobs=wiring.blob_store(), starter=starter,
                           model_name=summary_model_name(wiring.model_name()),
                           admission=admission_of(starter, settings.max_running_summaries,
                                                  settings.retry_after_seconds, "summaries"))
    return Response(status_code=202, content_type=content_types.APPLICATION_JSON,
                    body={"summary_id": record.summary_id, "status": record.status,
                          "execution_arn": record.execution_arn})


@router.get("/summaries/<summary_id>")
def get_summary(summary_id: str) -> dict[str, Any]:
    """The result (statements with citations, exact values, usage, cost) when done, else the status."""
    return summary_view(wiring.blob_store(), summary_id)
