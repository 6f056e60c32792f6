"""DynamoDB adapter of :class:`longdoc.bulk.ports.BulkStore` (AWS mode): items in the stack's table
(string keys ``pk``/``sk``, as in ``template.yaml``), the body as a JSON string attribute ``body``.

Calls: ``dynamodb:PutItem`` (the conditional one with ``attribute_not_exists(pk)``),
``dynamodb:GetItem`` (consistent reads: Submit must see a batch id written a moment before),
``dynamodb:Query`` (``begins_with(sk, :prefix)``, every page, or one page of ``Limit`` items) and
``dynamodb:BatchWriteItem`` (:meth:`DynamoBulkStore.put_many`, 25 items a call). An item is at most 400 KB
(DynamoDB's limit); bulk items hold ids and counters only, far below it.
"""

from __future__ import annotations

import json
from typing import Any

from longdoc.adapters.dynamo_client import LazyDynamoClient
from longdoc.adapters.dynamo_batch import batch_write


class DynamoBulkStore(LazyDynamoClient):
    """Bulk items in the DynamoDB table ``table_name`` (through ``client`` if given, else a boto3
    client created on first use)."""


    @staticmethod
    def _item(pk: str, sk: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"pk": {"S": pk}, "sk": {"S": sk}, "body": {"S": json.dumps(body)}}

    def put(self, pk: str, sk: str, body: dict[str, Any]) -> None:
        """Write the item (overwrite)."""
        self.client.put_item(TableName=self.table_name, Item=self._item(pk, sk, body))

    def put_if_absent(self, pk: str, sk: str, body: dict[str, Any]) -> bool:
        """Write the item only if none exists (``attribute_not_exists(pk)``); returns whether it was written."""
        try:
            self.client.put_item(TableName=self.table_name, Item=self._item(pk, sk, body),
                                 ConditionExpression="attribute_not_exists(pk)")
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def get(self, pk: str, sk: str) -> dict[str, Any] | None:
        """The item's body (a consistent read), or None."""
        item = self.client.get_item(TableName=self.table_name, Key={"pk": {"S": pk}, "sk": {"S": sk}},
                                    ConsistentRead=True).get("Item")
        return json.loads(item["body"]["S"]) if item else None

    def query(self, pk: str, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
        """``(sk, body)`` under ``pk`` whose sort key starts with ``prefix``, in sort-key order (all pages)."""
        args: dict[str, Any] = {"TableName": self.table_name, "ConsistentRead": True,
                                "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
                                "ExpressionAttributeValues": {":pk": {"S": pk}, ":prefix": {"S": prefix}}}
        if not prefix:
            args["KeyConditionExpression"] = "pk = :pk"
            del args["ExpressionAttributeValues"][":prefix"]
        out: list[tuple[str, dict[str, Any]]] = []
        while True:
            page = self.client.query(**args)
            out.extend((i["sk"]["S"], json.loads(i["body"]["S"])) for i in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return out
            args["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def put_many(self, pk: str, items: list[tuple[str, dict[str, Any]]]) -> None:
        """Write many items under ``pk`` with ``BatchWriteItem`` (25 a call, unprocessed ones retried)."""
        batch_write(self.client, self.table_name, [self._item(pk, sk, body) for sk, body in items])

    def query_page(self, pk: str, prefix: str, limit: int,
                   after: str | None = None) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
        """One consistent ``Query`` page of at most ``limit`` items after sort key ``after``, and the
        last sort key when DynamoDB says more may follow (``LastEvaluatedKey``)."""
        args: dict[str, Any] = {"TableName": self.table_name, "ConsistentRead": True, "Limit": limit,
                                "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
                                "ExpressionAttributeValues": {":pk": {"S": pk}, ":prefix": {"S": prefix}}}
        if after:
            args["ExclusiveStartKey"] = {"pk": {"S": pk}, "sk": {"S": after}}
        page = self.client.query(**args)
        items = [(i["sk"]["S"], json.loads(i["body"]["S"])) for i in page.get("Items", [])]
        return items, (items[-1][0] if "LastEvaluatedKey" in page and items else None)
