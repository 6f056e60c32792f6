"""One boto3 DynamoDB client per store instance, made on first use (the three DynamoDB adapters).

A store is built at composition (cold start) but may never touch the table on a given path, so
the client is created lazily, once, under a lock (boto3 clients are thread-safe once made; their
creation is not: https://boto3.amazonaws.com/v1/documentation/api/latest/guide/clients.html).
"""

from __future__ import annotations

import threading
from typing import Any


class LazyDynamoClient:
    """Base of the DynamoDB stores: ``table_name`` and ``client`` (the one given, or a boto3
    ``dynamodb`` client created on first access, thread-safe, once per instance)."""

    def __init__(self, table_name: str, client: Any | None = None) -> None:
        self.table_name = table_name
        self._client = client
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The boto3 DynamoDB client, created on first access."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import boto3

                    self._client = boto3.client("dynamodb")
        return self._client
