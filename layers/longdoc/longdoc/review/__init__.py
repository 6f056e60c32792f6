"""The review loop: items to sign off, append-only decisions, the reviewed result and gold labels.

Public API (issue 29): :class:`ReviewService` (``queue``, ``item``, ``decide``, ``history``,
``reviewed_result``, ``export_gold``, ``enqueue``, ``items``, ``locate_span``), :class:`ReviewSources`,
and the shapes :class:`ReviewItem`, :class:`DecisionRequest`, :class:`Decision` (from
:mod:`longdoc.core.reviews`, where the :class:`~longdoc.core.ports.DecisionStore` port can name them).
Build the service with :func:`longdoc.wiring.review_service`.
"""

from __future__ import annotations

from longdoc.core.reviews import Action, Decision, DecisionRequest, ItemKind, ItemStatus, ReviewItem, item_id_for
from longdoc.review.service import DEFAULT_ACCEPT_THRESHOLD, ReviewService, ReviewSources

__all__ = ["DEFAULT_ACCEPT_THRESHOLD", "Action", "Decision", "DecisionRequest", "ItemKind", "ItemStatus",
           "ReviewItem", "ReviewService", "ReviewSources", "item_id_for"]
