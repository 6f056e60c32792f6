"""StateStore adapters: one DynamoDB table (:class:`DynamoStateStore`) and SQLite (:class:`SqliteStateStore`).

Both implement :class:`longdoc.core.ports.StateStore` with the same semantics. Every record is
stored as the JSON string of its pydantic model (``model_dump_json()``), so exact values
such as ``"$247.83"`` come back byte for byte.

DynamoDB item layout (hash key ``pk`` S, range key ``sk`` S, TTL attribute ``expires_at``):

================  =========================  ==========================================
pk                sk                         other attributes
================  =========================  ==========================================
``DOC#{doc_id}``  ``VERSION#{doc_version}``  status, doc_version, body, updated_at, revision (N)
``DOC#{doc_id}``  ``LATEST``                 doc_version
``DOC#{doc_id}``  ``CLAIM#{doc_version}``    owner, expires_at (N, epoch s; the ingest claim, ``leases.py``)
``RUN#{run_id}``  ``RUN``                    status, body
``RUN#{run_id}``  ``CHECKPOINT``             version (N), body, expires_at (N, epoch s; ended runs only)
``RUN#{run_id}``  ``EXTRACTION#{key}``       clause_type, body, order (N), created_at
``RUN#{run_id}``  ``LEASE``                  owner, lease_until (N, epoch s, float; 0 released), renewed_at, generation (N)
``COLLECTION#n``  ``DOC#{doc_id}``           doc_id (a member of collection ``n``, written at ingest: ``collection_index.py``)
``COLLECTIONS``   ``NAME#{n}``               name (one per collection)
================  =========================  ==========================================

``{key}`` is :attr:`Extraction.key`: the clause type, plus ``#{instance}`` for a found
instance, so each instance of a clause type is its own small item.
Only checkpoints expire, and only once the run has ended: the session that finishes a run
(or the task recording its failure) sets ``Checkpoint.expires_at`` = end time +
:data:`CHECKPOINT_TTL_SECONDS`, written as the TTL attribute; while a run is in progress
its checkpoint has no ``expires_at``. Documents, runs and extractions are results and are kept.
The ``LEASE`` item (:class:`~longdoc.core.records.RunLease`) is written only by conditional
writes: at most one live owner drives a run's executions; ``lease_until`` is not a TTL attribute.
Its ``generation`` is the fencing token: a write passed ``fence`` is one ``TransactWriteItems`` with a
``ConditionCheck`` that the ``LEASE`` item still has that generation (:class:`~longdoc.core.errors.RunLeaseLost`
otherwise).
A ``VERSION#`` item's ``status`` and ``revision`` mirror its body, so that
``replace_document`` can write it conditionally (an ingest never overwrites a ``DELETED``
mark or another worker's newer entry).
"""

from longdoc.adapters.state.common import CHECKPOINT_TTL_SECONDS, checkpoint_expiry
from longdoc.adapters.state.dynamo import DynamoStateStore
from longdoc.adapters.state.sqlite import SqliteStateStore

__all__ = ["CHECKPOINT_TTL_SECONDS", "DynamoStateStore", "SqliteStateStore", "checkpoint_expiry"]
