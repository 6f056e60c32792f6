"""What the bulk steps need (:class:`BulkDeps`), apart from the steps so every step module can take it."""

from __future__ import annotations

from dataclasses import dataclass, field

from longdoc.bulk.plan import BulkLimits
from longdoc.bulk.ports import BatchClient, BulkStore
from longdoc.extract.public import Deps, SessionOptions


@dataclass(frozen=True)
class BulkDeps:
    """What the bulk steps need: the extraction adapters, a batch client, the bulk store, limits, and
    the session options every round uses (:func:`longdoc.wiring.session_options` in the function)."""

    extract: Deps
    batches: BatchClient
    store: BulkStore
    limits: BulkLimits
    options: SessionOptions = field(default_factory=SessionOptions)
