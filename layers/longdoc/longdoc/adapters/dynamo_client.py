"""One boto3 client per store instance, made on first use (the S3 blob store and the DynamoDB stores).

A store is built at composition (cold start) but may never touch AWS on a given path, so the
client is created lazily, once, under a lock (boto3 clients are thread-safe once made; their
creation is not: https://boto3.amazonaws.com/v1/documentation/api/latest/guide/clients.html).
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar


class LazyBotoClient:
    """Base of the AWS stores: ``client`` is the one given, or a boto3 client of :attr:`service`
    created on first access (thread-safe, once per instance, default credential chain and region)."""

    service: ClassVar[str]

    def __init__(self, client: Any | None = None) -> None:
        self._client = client
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The boto3 client, created on first access."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import boto3

                    self._client = boto3.client(self.service)
        return self._client


class LazyDynamoClient(LazyBotoClient):
    """Base of the DynamoDB stores: ``table_name`` and a lazily made ``dynamodb`` client."""

    service = "dynamodb"

    def __init__(self, table_name: str, client: Any | None = None) -> None:
        super().__init__(client)
        self.table_name = table_name
