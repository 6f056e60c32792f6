"""Contract test: the SQLite and DynamoDB adapters of :class:`longdoc.bulk.ports.BulkStore` behave the same.

SQLite on ``tmp_path``; DynamoDB on moto's in-process table with the stack's key schema
(string ``pk``/``sk``, as in ``template.yaml``), no network.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from longdoc.adapters.bulk_store import SqliteBulkStore
from longdoc.adapters.bulk_store_dynamo import DynamoBulkStore
from longdoc.bulk.ports import BulkStore

TABLE = "longdoc-test-table"


@pytest.fixture(params=["sqlite", "dynamodb"])
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BulkStore]:
    if request.param == "sqlite":
        yield SqliteBulkStore(tmp_path / "bulk.sqlite3")
        return
    for name, value in {"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing",
                        "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                                  {"AttributeName": "sk", "AttributeType": "S"}],
                            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                       {"AttributeName": "sk", "KeyType": "RANGE"}])
        yield DynamoBulkStore(TABLE, client)


def test_put_get_and_overwrite(store: BulkStore) -> None:
    assert store.get("bulk#a", "job") is None
    store.put("bulk#a", "job", {"clause_types": ["Insurance"], "runs": 2, "note": "ünïcode €"})
    assert store.get("bulk#a", "job") == {"clause_types": ["Insurance"], "runs": 2, "note": "ünïcode €"}
    store.put("bulk#a", "job", {"runs": 3})
    assert store.get("bulk#a", "job") == {"runs": 3}
    assert store.get("bulk#b", "job") is None  # another partition


def test_put_if_absent_writes_once(store: BulkStore) -> None:
    assert store.put_if_absent("bulk#a", "batch#0000#0000", {"batch_id": "msgbatch_1"}) is True
    assert store.put_if_absent("bulk#a", "batch#0000#0000", {"batch_id": "msgbatch_2"}) is False
    assert store.get("bulk#a", "batch#0000#0000") == {"batch_id": "msgbatch_1"}


def test_put_if_absent_has_one_winner_among_threads(store: BulkStore) -> None:
    wins: list[bool] = []
    threads = [threading.Thread(target=lambda i=i: wins.append(store.put_if_absent("bulk#a", "batch#x", {"i": i})))
               for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(wins) == [False] * 7 + [True]


def test_query_by_prefix_in_sort_key_order_over_many_pages(store: BulkStore) -> None:
    # ~400 items of ~4 KB: over DynamoDB's 1 MB page, so the adapter must follow LastEvaluatedKey
    for i in reversed(range(400)):
        store.put("bulk#a", f"run#{i:05d}", {"i": i, "pad": "x" * 4000})
    store.put("bulk#a", "job", {"runs": 400})
    store.put("bulk#a", "runx", {"not": "a run"})
    store.put("bulk#b", "run#00000", {"other": True})
    runs = store.query("bulk#a", "run#")
    assert [sk for sk, _ in runs] == [f"run#{i:05d}" for i in range(400)]
    assert [body["i"] for _, body in runs] == list(range(400))
    everything = [sk for sk, _ in store.query("bulk#a")]
    assert everything[:2] == ["job", "run#00000"] and everything[-1] == "runx" and len(everything) == 402
    assert store.query("bulk#a", "nothing#") == []
