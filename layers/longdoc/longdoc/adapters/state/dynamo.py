"""StateStore in one DynamoDB table (AWS mode): :class:`DynamoStateStore`.

The item layout is in the docstring of :mod:`longdoc.adapters.state`.
"""

from __future__ import annotations

import time
from typing import Any

from longdoc.adapters.dynamo_client import LazyDynamoClient
from longdoc.adapters.state.collection_index import DynamoRunsAndCollections
from longdoc.adapters.state.leases import DynamoVersionClaims
from longdoc.adapters.state.common import conflict_error, lease_lost_error, now_iso, parse_checkpoint
from longdoc.core.models import DocumentRecord
from longdoc.core.records import Checkpoint, Extraction, RunLease, RunRecord

def _s(value: str) -> dict[str, str]:
    """DynamoDB string attribute value."""
    return {"S": value}


def _n(value: int) -> dict[str, str]:
    """DynamoDB number attribute value from an int (never a float)."""
    return {"N": str(int(value))}


class DynamoStateStore(LazyDynamoClient, DynamoVersionClaims, DynamoRunsAndCollections):
    """StateStore in one DynamoDB table (layout in the module docstring).

    ``client`` is a boto3 low-level DynamoDB client; when omitted one is created on first
    use (once per instance, default credential chain and region). Reads are strongly
    consistent so a checkpoint saved by one Lambda invocation is seen by the next.
    Items are limited to 400 KB by DynamoDB
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html);
    bodies are stored as plain JSON strings.
    """

    def __init__(self, table_name: str, client: Any | None = None) -> None:
        """Use the table ``table_name``, through ``client`` if given."""
        super().__init__(table_name, client)
        self._last_order = 0

    def _get(self, pk: str, sk: str) -> dict[str, Any] | None:
        """Return the raw item at ``(pk, sk)`` (consistent read) or None."""
        response = self.client.get_item(
            TableName=self.table_name,
            Key={"pk": _s(pk), "sk": _s(sk)},
            ConsistentRead=True,
        )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def _document_puts(self, record: DocumentRecord, condition: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The two Puts of a document write: the version item (with ``condition``) and the ``LATEST`` pointer."""
        pk = _s(f"DOC#{record.doc_id}")
        version = {"TableName": self.table_name, **(condition or {}), "Item": {
            "pk": pk, "sk": _s(f"VERSION#{record.doc_version}"), "status": _s(record.status),
            "doc_version": _s(record.doc_version), "body": _s(record.model_dump_json()),
            "updated_at": _s(record.updated_at), "revision": _n(record.revision)}}
        latest = {"TableName": self.table_name, "Item": {"pk": pk, "sk": _s("LATEST"),
                                                         "doc_version": _s(record.doc_version)}}
        return [{"Put": version}, {"Put": latest}, *self.index_items(record)]

    def put_document(self, record: DocumentRecord) -> None:
        """Write the version item, the ``LATEST`` pointer and the collection index items
        (``collection_index.py``) in one TransactWriteItems call."""
        self.client.transact_write_items(TransactItems=self._document_puts(record))
        self.index_name(record)

    def replace_document(self, record: DocumentRecord, expected: DocumentRecord | None) -> DocumentRecord | None:
        """:meth:`put_document` with a condition on the version item; None when the transaction is cancelled by it.

        Condition: ``attribute_not_exists(pk)`` when ``expected`` is None, else ``#status =
        :status`` and ``#revision = :revision`` (an item written before revisions existed
        has no ``revision`` attribute and matches revision 0). Other errors propagate.
        """
        from botocore.exceptions import ClientError

        written = record.model_copy(update={"revision": (expected.revision if expected else 0) + 1})
        condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(pk)"}
        if expected is not None:
            revision = "#revision = :revision" + (" OR attribute_not_exists(#revision)" if expected.revision == 0 else "")
            condition = {"ConditionExpression": f"#status = :status AND ({revision})",
                         "ExpressionAttributeNames": {"#status": "status", "#revision": "revision"},
                         "ExpressionAttributeValues": {":status": _s(expected.status),
                                                       ":revision": _n(expected.revision)}}
        try:
            self.client.transact_write_items(TransactItems=self._document_puts(written, condition))
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons") or []
            if exc.response.get("Error", {}).get("Code") == "TransactionCanceledException" and any(
                    r.get("Code") == "ConditionalCheckFailed" for r in reasons):
                return None
            raise
        self.index_name(written)
        return written

    def get_document(self, doc_id: str, doc_version: str | None = None) -> DocumentRecord | None:
        """Return one version of a document (following ``LATEST`` when ``doc_version`` is None) or None."""
        if doc_version is None:
            latest = self._get(f"DOC#{doc_id}", "LATEST")
            if latest is None:
                return None
            doc_version = latest["doc_version"]["S"]
        item = self._get(f"DOC#{doc_id}", f"VERSION#{doc_version}")
        return DocumentRecord.model_validate_json(item["body"]["S"]) if item else None

    def _query_prefix(self, pk: str, sk_prefix: str) -> list[dict[str, Any]]:
        """All items of partition ``pk`` whose sort key starts with ``sk_prefix``, every page of
        a consistent Query (DynamoDB returns at most 1 MB per page, so paging is required)."""
        items: list[dict[str, Any]] = []
        paginator = self.client.get_paginator("query")
        for page in paginator.paginate(
            TableName=self.table_name,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={":pk": _s(pk), ":prefix": _s(sk_prefix)},
            ConsistentRead=True,
        ):
            items.extend(page.get("Items", []))
        return items

    def list_document_versions(self, doc_id: str) -> list[DocumentRecord]:
        """Query ``DOC#{doc_id}`` items with ``VERSION#`` keys (all pages), ordered by ``updated_at``."""
        records = [DocumentRecord.model_validate_json(item["body"]["S"])
                   for item in self._query_prefix(f"DOC#{doc_id}", "VERSION#")]
        records.sort(key=lambda r: (r.updated_at, r.doc_version))
        return records

    def list_document_ids(self) -> list[str]:
        """Every registered doc_id, sorted: a Scan for the ``LATEST`` items (all pages).

        A Scan reads the whole table; it is meant for listing policy sets (a few hundred
        documents), not for a hot path.
        """
        ids: set[str] = set()
        paginator = self.client.get_paginator("scan")
        for page in paginator.paginate(TableName=self.table_name, FilterExpression="sk = :latest",
                                       ExpressionAttributeValues={":latest": _s("LATEST")},
                                       ProjectionExpression="pk"):
            ids.update(item["pk"]["S"].removeprefix("DOC#") for item in page.get("Items", []))
        return sorted(ids)

    def _fenced(self, run_id: str, fence: int | None, write: dict[str, Any]) -> None:
        """Run one write (``{"Put": ...}`` or ``{"Update": ...}``, a TransactWriteItems item), fenced.

        Without ``fence``: the plain ``PutItem``/``UpdateItem``. With it: one ``TransactWriteItems``
        whose first item is a ``ConditionCheck`` of the run's ``LEASE`` item (``generation =
        :fence``); its failure raises :class:`RunLeaseLost`, the write's own condition failing
        raises ``ConditionalCheckFailedException`` as the plain call would
        (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html:
        ``CancellationReasons`` lists one code per item, in order).
        """
        from botocore.exceptions import ClientError

        (kind, params), = write.items()
        if fence is None:
            (self.client.put_item if kind == "Put" else self.client.update_item)(**params)
            return
        check = {"ConditionCheck": {"TableName": self.table_name, "Key": {"pk": _s(f"RUN#{run_id}"), "sk": _s("LEASE")},
                                    "ConditionExpression": "#gen = :fence",
                                    "ExpressionAttributeNames": {"#gen": "generation"},
                                    "ExpressionAttributeValues": {":fence": _n(fence)}}}
        try:
            self.client.transact_write_items(TransactItems=[check, write])
        except ClientError as exc:
            reasons = [r.get("Code") for r in exc.response.get("CancellationReasons") or []]
            if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException" or not reasons:
                raise
            if reasons[0] == "ConditionalCheckFailed":
                raise lease_lost_error(run_id, fence, self.get_run_lease(run_id)) from None
            if len(reasons) > 1 and reasons[1] == "ConditionalCheckFailed":
                raise ClientError({"Error": {"Code": "ConditionalCheckFailedException",
                                             "Message": "the write's own condition failed"}}, kind) from None
            raise

    def put_run(self, run: RunRecord, fence: int | None = None) -> None:
        """Create or replace the run item (fenced: see :meth:`longdoc.core.ports.StateStore.put_run`)."""
        self._fenced(run.run_id, fence, {"Put": {"TableName": self.table_name, "Item": {
            "pk": _s(f"RUN#{run.run_id}"), "sk": _s("RUN"), "status": _s(run.status),
            "body": _s(run.model_dump_json())}}})

    def get_run(self, run_id: str) -> RunRecord | None:
        """Return the run or None."""
        item = self._get(f"RUN#{run_id}", "RUN")
        return RunRecord.model_validate_json(item["body"]["S"]) if item else None

    def load_checkpoint(self, run_id: str) -> Checkpoint | None:
        """Return the run's checkpoint or None.

        Raises :class:`CheckpointSchemaError` when it was written with another
        CASE_FACTS ``schema_version``. An item past its TTL but not yet removed by
        DynamoDB (removal can lag) is still returned.
        """
        item = self._get(f"RUN#{run_id}", "CHECKPOINT")
        return parse_checkpoint(item["body"]["S"], run_id) if item else None

    def save_checkpoint(self, checkpoint: Checkpoint, fence: int | None = None) -> None:
        """Conditionally write the checkpoint item; ``expires_at`` only when ``checkpoint.expires_at`` is set.

        Condition: ``attribute_not_exists(pk)`` for versions 0 and 1, else
        ``version = checkpoint.version - 1``. Raises :class:`CheckpointConflict` when the
        condition fails (ConditionalCheckFailedException); other errors propagate. With ``fence``
        the write is one transaction with the lease check (:meth:`_fenced`, :class:`RunLeaseLost`).
        """
        from botocore.exceptions import ClientError

        condition: dict[str, Any]
        if checkpoint.version <= 1:
            condition = {"ConditionExpression": "attribute_not_exists(pk)"}
        else:
            condition = {
                "ConditionExpression": "#v = :previous",
                "ExpressionAttributeNames": {"#v": "version"},
                "ExpressionAttributeValues": {":previous": _n(checkpoint.version - 1)},
            }
        try:
            item = {
                "pk": _s(f"RUN#{checkpoint.run_id}"),
                "sk": _s("CHECKPOINT"),
                "version": _n(checkpoint.version),
                "body": _s(checkpoint.model_dump_json()),
            }
            if checkpoint.expires_at is not None:
                item["expires_at"] = _n(checkpoint.expires_at)
            self._fenced(checkpoint.run_id, fence, {"Put": {"TableName": self.table_name, "Item": item, **condition}})
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise conflict_error(checkpoint) from None
            raise

    def _next_order(self) -> int:
        """Return nanoseconds since the epoch, strictly increasing within this instance."""
        with self._lock:
            self._last_order = max(time.time_ns(), self._last_order + 1)
            return self._last_order

    def put_extraction(self, run_id: str, extraction: Extraction, fence: int | None = None) -> None:
        """Upsert the item ``EXTRACTION#{extraction.key}``; ``order`` and ``created_at`` keep their first-write values.

        With ``fence`` the update is one transaction with the lease check (:meth:`_fenced`)."""
        self._fenced(run_id, fence, {"Update": dict(
            TableName=self.table_name,
            Key={"pk": _s(f"RUN#{run_id}"), "sk": _s(f"EXTRACTION#{extraction.key}")},
            UpdateExpression=(
                "SET #body = :body, clause_type = :clause, "
                "#order = if_not_exists(#order, :order), "
                "created_at = if_not_exists(created_at, :created)"
            ),
            ExpressionAttributeNames={"#body": "body", "#order": "order"},
            ExpressionAttributeValues={
                ":body": _s(extraction.model_dump_json()),
                ":clause": _s(extraction.clause_type),
                ":order": _n(self._next_order()),
                ":created": _s(now_iso()),
            },
        )})

    def list_extractions(self, run_id: str) -> list[Extraction]:
        """Query the run's extraction items (all pages) and return them by first-write order."""
        items = self._query_prefix(f"RUN#{run_id}", "EXTRACTION#")
        items.sort(key=lambda item: (int(item["order"]["N"]), item["sk"]["S"]))
        return [Extraction.model_validate_json(item["body"]["S"]) for item in items]

    def _lease_write(self, run_id: str, owner: str, ttl_seconds: float, generation: int, condition: str,
                     values: dict[str, Any]) -> bool:
        """Put the ``LEASE`` item (``generation``) under ``condition`` (names ``#owner``, ``#until``, ``#gen``
        when used; ``values`` its values); False when the condition fails."""
        from botocore.exceptions import ClientError

        now = time.time()
        item = {"pk": _s(f"RUN#{run_id}"), "sk": _s("LEASE"), "owner": _s(owner),
                "lease_until": {"N": repr(now + ttl_seconds)}, "renewed_at": _s(now_iso()),
                "generation": _n(generation)}
        names = {k: v for k, v in {"#owner": "owner", "#until": "lease_until", "#gen": "generation"}.items()
                 if k in condition}
        values = {":now": {"N": repr(now)}, **values}
        values = {k: v for k, v in values.items() if k in condition}
        try:  # DynamoDB refuses names or values the condition does not use
            self.client.put_item(TableName=self.table_name, Item=item, ConditionExpression=condition,
                                 ExpressionAttributeNames=names, **({"ExpressionAttributeValues": values} if values else {}))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def acquire_run_lease(self, run_id: str, owner: str, ttl_seconds: float) -> bool:
        """Take ``(RUN#{run_id}, LEASE)``: absent, ended (``lease_until <= now``) or ``owner``'s.

        Read the lease (consistent), then one conditional ``PutItem`` that also requires the
        generation read to be still stored (so two takers of one expired lease cannot both win);
        a new owner writes generation + 1. ``lease_until`` is not the table's TTL attribute: an
        ended lease stays readable, with its generation.
        """
        seen = self.get_run_lease(run_id)
        if seen is None:
            return self._lease_write(run_id, owner, ttl_seconds, 1, "attribute_not_exists(pk)", {})
        same = "attribute_not_exists(#gen)" if seen.generation == 0 else "#gen = :seen"
        generation = seen.generation if seen.owner == owner and seen.generation > 0 else seen.generation + 1
        return self._lease_write(run_id, owner, ttl_seconds, generation, f"{same} AND (#until <= :now OR #owner = :owner)",
                                 {":owner": _s(owner), ":seen": _n(seen.generation)})

    def renew_run_lease(self, run_id: str, owner: str, ttl_seconds: float) -> bool:
        """Conditionally put the lease item only while ``owner`` holds it (not released), generation kept."""
        seen = self.get_run_lease(run_id)
        if seen is None or seen.owner != owner or seen.released:
            return False
        return self._lease_write(run_id, owner, ttl_seconds, seen.generation, "#owner = :owner AND #until > :zero",
                                 {":owner": _s(owner), ":zero": {"N": "0"}})

    def release_run_lease(self, run_id: str, owner: str) -> None:
        """End the lease (``lease_until`` 0, generation kept) when ``owner`` holds it (a lost condition is ignored)."""
        from botocore.exceptions import ClientError

        try:
            self.client.update_item(TableName=self.table_name, Key={"pk": _s(f"RUN#{run_id}"), "sk": _s("LEASE")},
                                    UpdateExpression="SET #until = :zero", ConditionExpression="#owner = :owner",
                                    ExpressionAttributeNames={"#owner": "owner", "#until": "lease_until"},
                                    ExpressionAttributeValues={":owner": _s(owner), ":zero": {"N": "0"}})
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

    def get_run_lease(self, run_id: str) -> RunLease | None:
        """Return the lease item (consistent read) or None."""
        item = self._get(f"RUN#{run_id}", "LEASE")
        if item is None:
            return None
        return RunLease(run_id=run_id, owner=item["owner"]["S"], expires_at=float(item["lease_until"]["N"]),
                        renewed_at=item.get("renewed_at", {}).get("S", ""),
                        generation=int(item.get("generation", {}).get("N", "0")))
