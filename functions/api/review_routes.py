"""Review routes of the API (issue 29): the queue, one item with its page, decisions, the reviewed result.

- ``GET /reviews?run_id=&threshold=&status=queue|all``: the queue (pending items under the accept
  threshold and every possible omission, lowest confidence first), or every item. With ``run_id`` that
  run is snapshotted into items first (a finished run only); without it, the runs already snapshotted.
- ``GET /reviews/{item_id}?page=N``: the item, its decision history, the span in force and the text of
  every chunk on the page shown (:func:`longdoc.eval.review_views.item_view`).
- ``GET /reviews/{item_id}/page-image?page=N``: that page of the source PDF with the span boxed
  (:func:`longdoc.eval.review_views.page_image`; 404 for a document that is not a PDF).
- ``POST /reviews/{item_id}/decisions``: ``{"action": accept|correct|reject|mark_present|mark_absent,
  "quote"?, "chunk_id"?, "page"?, "note"?, "expected_version"?}`` -> 201 ``{"decision", "item"}``.
  A stale ``expected_version`` is a 409 (nothing stored), a correction that is not verbatim in the
  document a 422 naming the document and page, a decision that does not fit the item a 400.
- ``GET /extractions/{id}/reviewed-result``: the run's model output with the latest decisions applied.

The reviewer is the caller's IAM identity (``requestContext.identity.userArn``, else ``caller``); a
body's ``reviewer`` counts only without one, i.e. under ``longdoc serve`` (:func:`~longdoc.eval.review_views.reviewer_of`).
Thin: each route calls :class:`longdoc.review.ReviewService` or a view over it; errors map in ``app.py``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BaseModel, ConfigDict, Field

from longdoc import wiring
from longdoc.observability import logger
from longdoc.review import DecisionRequest
from longdoc.eval.review_views import item_view, page_image, reviewer_of

router = Router()


class DecisionBody(BaseModel):
    """Body of ``POST /reviews/{item_id}/decisions`` (quote: at most 2,000 characters; the domain caps a
    quote at 600 characters and 4 sentences, :func:`longdoc.search.quotes.quote_problem`)."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["accept", "correct", "reject", "mark_present", "mark_absent"]
    quote: str | None = Field(None, max_length=2000, description="the selected span, verbatim from the document")
    chunk_id: str | None = Field(None, max_length=200, description="the chunk the span was selected in")
    page: int | None = Field(None, ge=1, le=100_000, description="the 1-based page the span is on")
    note: str | None = Field(None, max_length=1000)
    expected_version: int | None = Field(None, ge=0, description="refuse (409) unless the item is at this version")
    reviewer: str | None = Field(None, max_length=200, description="only without an IAM identity (longdoc serve)")


@router.get("/reviews")
def list_reviews(run_id: Annotated[str | None, Query(max_length=200)] = None,
                 threshold: Annotated[float | None, Query(ge=0, le=1)] = None,
                 status: Annotated[Literal["queue", "all"], Query()] = "queue") -> dict[str, Any]:
    """The review queue ordered by confidence (or every item with ``status=all``): ``{"items", "count",
    "threshold", "run_id"}``; each item carries its ``status`` and ``version``."""
    service = wiring.review_service()
    items = service.items(run_id) if status == "all" else service.queue(run_id, threshold)
    return {"items": [i.model_dump(mode="json") for i in items], "count": len(items),
            "threshold": service.threshold if threshold is None else threshold, "run_id": run_id}


@router.get("/reviews/<item_id>")
def get_review(item_id: str, page: Annotated[int | None, Query(ge=1, le=100_000)] = None) -> dict[str, Any]:
    """One item with its history, the span in force and the text of the chunks on the page shown."""
    return item_view(wiring.review_service(), item_id, page)


@router.get("/reviews/<item_id>/page-image")
def get_review_page_image(item_id: str,
                          page: Annotated[int | None, Query(ge=1, le=100_000)] = None) -> dict[str, Any]:
    """The shown page rendered (JPEG data URI) with the span's boxes as fractions of the image."""
    return page_image(wiring.review_service(), item_id, wiring.blob_store().get, page)


@router.post("/reviews/<item_id>/decisions")
def post_decision(item_id: str, body: DecisionBody) -> Response[dict[str, Any]]:
    """Store one decision (append-only; the model output is never changed): 201 with it and the item after it."""
    identity = router.current_event.request_context.identity
    reviewer = reviewer_of(identity.user_arn, identity.caller, body.reviewer)
    service = wiring.review_service()
    request = DecisionRequest(action=body.action, reviewer=reviewer, quote=body.quote, chunk_id=body.chunk_id,
                              page=body.page, note=body.note)
    decision = service.decide(item_id, request, expected_version=body.expected_version)
    logger.info("review decision", extra={"item_id": item_id, "action": body.action, "version": decision.version,
                                          "reviewer": reviewer, "source_ip": identity.source_ip})
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON,
                    body={"decision": decision.model_dump(mode="json"),
                          "item": service.item(item_id).model_dump(mode="json")})


@router.get("/extractions/<run_id>/reviewed-result")
def get_reviewed_result(run_id: str) -> dict[str, Any]:
    """The run result with ``reviewed_extractions`` (latest decisions applied) and ``review`` (which items)."""
    return wiring.review_service().reviewed_result(run_id)
