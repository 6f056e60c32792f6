"""DynamoDB adapter of :class:`longdoc.core.ports.DecisionStore` (AWS mode), in the stack's table
(string keys ``pk``/``sk``, as in ``template.yaml``; bodies as JSON strings in ``body``).

Items (``pk``, ``sk``):

- ``REVIEW#ITEM#<item_id>`` / ``ITEM``: the item snapshot (conditional put ``attribute_not_exists(pk)``);
- ``REVIEW#ITEM#<item_id>`` / ``DECISION#<version, 8 digits>``: one decision, the same conditional put
  (a second writer of one version gets ``ConditionalCheckFailedException`` -> :class:`DecisionConflict`);
- ``REVIEW#RUN#<run_id>`` / ``ITEM#<clause_type>#<index, 5 digits>#<item_id>``: the run's item list;
- ``REVIEW#RUNS`` / ``RUN#<run_id>``: the runs that have items.

Calls: ``dynamodb:PutItem``, ``dynamodb:GetItem`` and ``dynamodb:Query`` (consistent reads, every page).
An item is at most 400 KB (DynamoDB's limit); an item or decision holds one quote (at most 600
characters, :data:`longdoc.search.quotes.MAX_QUOTE_CHARS`) and a clause text, far below it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from longdoc.adapters.dynamo_client import LazyDynamoClient
from longdoc.core.errors import DecisionConflict
from longdoc.core.reviews import Decision, ReviewItem

RUNS_PK = "REVIEW#RUNS"


class DynamoDecisionStore(LazyDynamoClient):
    """Review items and decisions in the DynamoDB table ``table_name`` (``client`` or a boto3 one made on first use)."""

    def _put(self, pk: str, sk: str, body: str, only_new: bool) -> bool:
        """Write one item; ``only_new``: conditionally (``attribute_not_exists(pk)``). Returns whether written."""
        args: dict[str, Any] = {"TableName": self.table_name,
                                "Item": {"pk": {"S": pk}, "sk": {"S": sk}, "body": {"S": body}}}
        if only_new:
            args["ConditionExpression"] = "attribute_not_exists(pk)"
        try:
            self.client.put_item(**args)
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def _query(self, pk: str, prefix: str) -> list[str]:
        """Bodies under ``pk`` whose sort key starts with ``prefix``, in sort-key order (all pages)."""
        args: dict[str, Any] = {"TableName": self.table_name, "ConsistentRead": True,
                                "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
                                "ExpressionAttributeValues": {":pk": {"S": pk}, ":prefix": {"S": prefix}}}
        out: list[str] = []
        while True:
            page = self.client.query(**args)
            out.extend(i["body"]["S"] for i in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return out
            args["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def put_items(self, items: Sequence[ReviewItem]) -> int:
        """Store the items not stored yet (each a conditional put, then its run-list entries); returns how many were new."""
        new = 0
        for i in items:
            body = i.model_dump_json()
            if self._put(f"REVIEW#ITEM#{i.item_id}", "ITEM", body, only_new=True):
                new += 1
            # the run-list entries are idempotent overwrites: a retry after a failure in between completes them
            self._put(f"REVIEW#RUN#{i.run_id}", f"ITEM#{i.clause_type}#{i.index:05d}#{i.item_id}", body, only_new=False)
            self._put(RUNS_PK, f"RUN#{i.run_id}", json.dumps({"run_id": i.run_id}), only_new=False)
        return new

    def get_item(self, item_id: str) -> ReviewItem | None:
        """The stored item (a consistent read) or None."""
        got = self.client.get_item(TableName=self.table_name, ConsistentRead=True,
                                   Key={"pk": {"S": f"REVIEW#ITEM#{item_id}"}, "sk": {"S": "ITEM"}}).get("Item")
        return ReviewItem.model_validate_json(got["body"]["S"]) if got else None

    def list_items(self, run_id: str | None = None) -> list[ReviewItem]:
        """The items of ``run_id`` (every run's when None), in ``(run_id, clause_type, index)`` order."""
        runs = [run_id] if run_id is not None else sorted(json.loads(b)["run_id"] for b in self._query(RUNS_PK, "RUN#"))
        items = [ReviewItem.model_validate_json(b) for r in runs for b in self._query(f"REVIEW#RUN#{r}", "ITEM#")]
        return sorted(items, key=lambda i: (i.run_id, i.clause_type, i.index))

    def append_decision(self, decision: Decision) -> Decision:
        """Put ``decision`` under its version only if absent; :class:`DecisionConflict` when that version exists."""
        if not self._put(f"REVIEW#ITEM#{decision.item_id}", f"DECISION#{decision.version:08d}",
                         decision.model_dump_json(), only_new=True):
            raise DecisionConflict(f"item {decision.item_id} already has a decision version {decision.version}: "
                                   "another decision came first; reload it and decide again")
        return decision

    def decisions(self, item_id: str) -> list[Decision]:
        """The item's decisions, version 1 first."""
        return [Decision.model_validate_json(b) for b in self._query(f"REVIEW#ITEM#{item_id}", "DECISION#")]
