"""Ingest leases (claims) on document versions, for both StateStore adapters (mixed into their classes).

A claim says "this worker is ingesting ``(doc_id, doc_version)`` until ``expires_at``" so
that two deliveries of the same new object do not both embed it
(:meth:`longdoc.core.ports.StateStore.claim_version`). It is taken with one conditional
write that succeeds only when no claim is held, the holder's lease ended, or the caller
already holds it (a renewal).

- DynamoDB: item ``pk = DOC#{doc_id}``, ``sk = CLAIM#{doc_version}`` with ``owner`` (S) and
  ``expires_at`` (N, epoch seconds, rounded up), written by ``PutItem`` with the condition
  ``attribute_not_exists(pk) OR expires_at < :now OR #owner = :owner``
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html).
  ``expires_at`` is the table's TTL attribute, so DynamoDB also removes stale claims in
  time (TTL deletion may lag by days; the condition never relies on it). Document
  version queries read only ``VERSION#`` keys, so claim items never show up as versions.
- SQLite: table ``claims`` (created on first use), read and written inside one ``BEGIN
  IMMEDIATE`` transaction. The store is one local file, so every holder runs on this
  machine: a claim whose holder process is gone (:func:`~longdoc.ingest.lease.claim_holder_gone`,
  e.g. a ``longdoc ingest`` killed with ``kill -9``) is taken over at once instead of after
  its lease. DynamoDB keeps to the lease: Lambda host names and pids are not comparable.
"""

from __future__ import annotations

import math
import sqlite3
import time
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from longdoc.ingest.lease import claim_holder_gone

_CLAIMS_TABLE = """CREATE TABLE IF NOT EXISTS claims (
    doc_id TEXT NOT NULL, doc_version TEXT NOT NULL, owner TEXT NOT NULL, expires_at REAL NOT NULL,
    PRIMARY KEY (doc_id, doc_version))"""


class SqliteVersionClaims:
    """Claims in the ``claims`` table of the store's SQLite file (needs the store's ``_write()``)."""

    if TYPE_CHECKING:  # provided by SqliteStateStore
        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def claim_version(self, doc_id: str, doc_version: str, owner: str, lease_seconds: float) -> bool:
        """Take or renew the claim for ``owner`` for ``lease_seconds`` seconds; False when another owner holds it.

        Another owner's claim is free once its lease ended or its process is gone from this host.
        """
        now = time.time()
        with self._write() as conn:
            conn.execute(_CLAIMS_TABLE)
            row = conn.execute("SELECT owner, expires_at FROM claims WHERE doc_id = ? AND doc_version = ?",
                               (doc_id, doc_version)).fetchone()
            if row is not None and row[0] != owner and row[1] >= now and not claim_holder_gone(row[0]):
                return False
            conn.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?)",
                         (doc_id, doc_version, owner, now + lease_seconds))
            return True

    def version_claim_owner(self, doc_id: str, doc_version: str) -> str | None:
        """The owner of the version's claim while its lease runs, else None."""
        with self._write() as conn:  # a write transaction, so the table is created on first use
            conn.execute(_CLAIMS_TABLE)
            row = conn.execute("SELECT owner FROM claims WHERE doc_id = ? AND doc_version = ? AND expires_at >= ?",
                               (doc_id, doc_version, time.time())).fetchone()
        return str(row[0]) if row else None

    def release_version(self, doc_id: str, doc_version: str, owner: str) -> None:
        """Delete ``owner``'s claim on the version (another owner's claim stays)."""
        with self._write() as conn:
            conn.execute(_CLAIMS_TABLE)
            conn.execute("DELETE FROM claims WHERE doc_id = ? AND doc_version = ? AND owner = ?",
                         (doc_id, doc_version, owner))


class DynamoVersionClaims:
    """Claims as ``CLAIM#{doc_version}`` items of the document's partition (needs ``client`` and ``table_name``)."""

    table_name: str

    if TYPE_CHECKING:  # provided by DynamoStateStore
        @property
        def client(self) -> Any: ...

    def _claim_key(self, doc_id: str, doc_version: str) -> dict[str, dict[str, str]]:
        return {"pk": {"S": f"DOC#{doc_id}"}, "sk": {"S": f"CLAIM#{doc_version}"}}

    def claim_version(self, doc_id: str, doc_version: str, owner: str, lease_seconds: float) -> bool:
        """Conditional ``PutItem`` of the claim item; False on ``ConditionalCheckFailedException``.

        Other errors (throttling, access) propagate.
        """
        from botocore.exceptions import ClientError

        now = time.time()
        item = {**self._claim_key(doc_id, doc_version), "owner": {"S": owner},
                "expires_at": {"N": str(math.ceil(now + lease_seconds))}}
        try:
            self.client.put_item(
                TableName=self.table_name, Item=item,
                ConditionExpression="attribute_not_exists(pk) OR expires_at < :now OR #owner = :owner",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":now": {"N": str(math.floor(now))}, ":owner": {"S": owner}})
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def version_claim_owner(self, doc_id: str, doc_version: str) -> str | None:
        """The ``owner`` of the claim item (consistent read) while ``expires_at >= now``, else None."""
        item = self.client.get_item(TableName=self.table_name, Key=self._claim_key(doc_id, doc_version),
                                    ConsistentRead=True).get("Item")
        if item is None or int(item["expires_at"]["N"]) < math.floor(time.time()):
            return None
        return str(item["owner"]["S"])

    def release_version(self, doc_id: str, doc_version: str, owner: str) -> None:
        """Conditional ``DeleteItem`` (``#owner = :owner``); another owner's claim (or none) is left alone."""
        from botocore.exceptions import ClientError

        try:
            self.client.delete_item(
                TableName=self.table_name, Key=self._claim_key(doc_id, doc_version),
                ConditionExpression="#owner = :owner", ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":owner": {"S": owner}})
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
