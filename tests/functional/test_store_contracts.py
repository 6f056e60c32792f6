"""Contract tests: every BlobStore and every StateStore adapter behaves the same.

The local adapters run on ``tmp_path``; the AWS adapters run on moto's in-process S3 and
DynamoDB (no network). DynamoDB-only and SQLite-only checks sit at the end.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from longdoc.adapters.blob import LocalBlobStore, S3BlobStore
from longdoc.adapters.state import CHECKPOINT_TTL_SECONDS, DynamoStateStore, SqliteStateStore, checkpoint_expiry
from longdoc.core.errors import CheckpointConflict, CheckpointSchemaError, NotFound, RunLeaseLost
from longdoc.core.records import CASE_FACTS_SCHEMA_VERSION, CaseFacts, Checkpoint, Citation, Extraction, ResolvedClause, RunRecord
from longdoc.core.models import DocumentRecord
from longdoc.core.messages import Usage
from longdoc.core.ports import BlobStore, StateStore

BUCKET = "longdoc-test-bucket"
TABLE = "longdoc-test-table"
UNICODE_KEY = "incoming/Master Services Agreement (v2) – Ünïcode.pdf"
EXACT = "$247.83"


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy region and credentials so boto3 never looks for real ones."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def create_table(client: Any) -> None:
    """Create the single table as template.yaml declares it: pk/sk strings, TTL on expires_at."""
    client.create_table(
        TableName=TABLE,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    client.update_time_to_live(
        TableName=TABLE,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"},
    )


@pytest.fixture(params=["local", "s3"])
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BlobStore]:
    """A LocalBlobStore on tmp_path, or an S3BlobStore (lazy client) on a moto bucket."""
    if request.param == "local":
        yield LocalBlobStore(tmp_path / "blobs")
        return
    request.getfixturevalue("aws_env")
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        yield S3BlobStore(BUCKET)


@pytest.fixture(params=["sqlite", "dynamodb"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateStore]:
    """A SqliteStateStore on tmp_path, or a DynamoStateStore (lazy client) on a moto table."""
    if request.param == "sqlite":
        yield SqliteStateStore(tmp_path / "state" / "longdoc.sqlite3")
        return
    request.getfixturevalue("aws_env")
    with mock_aws():
        create_table(boto3.client("dynamodb"))
        yield DynamoStateStore(TABLE)


def _overwrite_checkpoint_body(state: StateStore, run_id: str, body: str) -> None:
    """Replace a stored checkpoint's JSON body behind the adapter's back (an old writer's row)."""
    if isinstance(state, SqliteStateStore):
        with sqlite3.connect(state.path) as conn:
            conn.execute("UPDATE checkpoints SET body = ? WHERE run_id = ?", (body, run_id))
        return
    state.client.update_item(TableName=state.table_name, Key={"pk": {"S": f"RUN#{run_id}"}, "sk": {"S": "CHECKPOINT"}},
                             UpdateExpression="SET body = :b", ExpressionAttributeValues={":b": {"S": body}})


def make_document(version: str, status: str = "READY", pages: int = 3) -> DocumentRecord:
    """A registry entry for document ``msa`` at ``version``."""
    return DocumentRecord(
        doc_id="msa", doc_version=version, source=UNICODE_KEY, status=status,  # type: ignore[arg-type]
        pages=pages, chunks=pages * 4, content_sha256=version * 4,
        updated_at="2025-01-31T12:00:00+00:00", duration_seconds="1.250",
    )


def make_checkpoint(version: int, *, run_id: str = "run-1", decision: str = "",
                    schema_version: int = CASE_FACTS_SCHEMA_VERSION) -> Checkpoint:
    """A checkpoint at ``version`` carrying the exact value ``$247.83``."""
    facts = CaseFacts(
        schema_version=schema_version, run_id=run_id, doc_id="msa", doc_version="abcd1234abcd1234",
        clause_types=["governing_law", "payment_terms"], extracted_count=version,
        resolved={"governing_law": ResolvedClause(status="found", pages=[7], section_ids=["12.1"])},
        decisions=[d for d in [decision] if d], exact_values={"monthly_fee": EXACT},
    )
    return Checkpoint(run_id=run_id, version=version, case_facts=facts, sessions=version,
                      usage=Usage(input_tokens=1200 * version, output_tokens=80))


def make_extraction(clause_type: str, quote: str = "governed by the laws of Delaware") -> Extraction:
    """A found extraction with one citation."""
    return Extraction(
        clause_type=clause_type, status="found", clause_text=quote, model="baseline", session=1,
        citations=[Citation(chunk_id="msa:abcd1234:0007", page=7, section_id="12.1", quote=quote)],
    )


# ------------------------------------------------------------------------- BlobStore


def test_blob_adapters_satisfy_the_port(blobs: BlobStore) -> None:
    # Given an adapter / Then it is a BlobStore by the runtime-checkable Protocol
    assert isinstance(blobs, BlobStore)


def test_blob_put_get_exists_delete(blobs: BlobStore) -> None:
    # Given an empty store
    assert blobs.exists("docs/a.txt") is False
    # When a blob is stored
    blobs.put("docs/a.txt", b"hello\x00world")
    # Then it can be read back byte for byte and exists
    assert blobs.get("docs/a.txt") == b"hello\x00world"
    assert blobs.exists("docs/a.txt") is True
    # When it is deleted (twice: the second delete is not an error)
    blobs.delete("docs/a.txt")
    blobs.delete("docs/a.txt")
    # Then it is gone
    assert blobs.exists("docs/a.txt") is False


def test_blob_get_missing_raises_not_found_naming_the_key(blobs: BlobStore) -> None:
    # Given an empty store / When a missing key is read / Then NotFound names the key
    with pytest.raises(NotFound, match="missing/thing.pdf"):
        blobs.get("missing/thing.pdf")


def test_blob_overwrite_replaces_whole_content(blobs: BlobStore) -> None:
    # Given a long blob
    blobs.put("k/v.bin", b"x" * 100_000)
    # When it is overwritten with shorter bytes
    blobs.put("k/v.bin", b"short")
    # Then only the new bytes remain (no tail of the old content)
    assert blobs.get("k/v.bin") == b"short"


def test_blob_unicode_key_with_spaces(blobs: BlobStore) -> None:
    # Given a key with spaces, parentheses, an en dash and diacritics
    data = "Fee: $247.83 – Ünïcode".encode()
    # When it is stored
    blobs.put(UNICODE_KEY, data)
    # Then it round-trips and can be deleted
    assert blobs.exists(UNICODE_KEY)
    assert blobs.get(UNICODE_KEY) == data
    blobs.delete(UNICODE_KEY)
    assert not blobs.exists(UNICODE_KEY)


def test_blob_empty_bytes(blobs: BlobStore) -> None:
    # Given an empty payload / When stored / Then it exists and reads back empty
    blobs.put("empty", b"")
    assert blobs.exists("empty") and blobs.get("empty") == b""


def test_blob_metadata_of_an_object_stored_by_put_is_empty(blobs: BlobStore) -> None:
    # Given a blob stored through the port (which sets no user metadata), under a unicode key
    blobs.put(UNICODE_KEY, b"%PDF-1.7")
    # When its user metadata is read / Then there is none, and the bytes are untouched
    assert blobs.metadata(UNICODE_KEY) == {}
    assert blobs.get(UNICODE_KEY) == b"%PDF-1.7"


def test_blob_metadata_of_a_missing_object_raises_not_found_naming_the_key(blobs: BlobStore) -> None:
    # Given an empty store / When a missing key's metadata is read / Then NotFound names the key
    with pytest.raises(NotFound, match="missing/thing.pdf"):
        blobs.metadata("missing/thing.pdf")
    # And a deleted object is missing too
    blobs.put("gone.pdf", b"x")
    blobs.delete("gone.pdf")
    with pytest.raises(NotFound, match="gone.pdf"):
        blobs.metadata("gone.pdf")


@pytest.mark.parametrize("key", ["../escape.txt", "a/../../b", "/etc/passwd", "a//b", "./a", ""])
def test_local_blob_rejects_unsafe_keys(tmp_path: Path, key: str) -> None:
    # Given a local store
    store = LocalBlobStore(tmp_path / "root")
    # When an unsafe key is used / Then every operation raises ValueError and nothing is written
    for call in (lambda: store.put(key, b"x"), lambda: store.get(key),
                 lambda: store.exists(key), lambda: store.delete(key), lambda: store.metadata(key)):
        with pytest.raises(ValueError):
            call()
    assert not (tmp_path / "escape.txt").exists()


def test_local_blob_put_leaves_no_temp_files_and_keeps_old_bytes_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a stored blob
    store = LocalBlobStore(tmp_path)
    store.put("a/b.txt", b"old")
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b.txt"]

    # When the final rename fails mid-write
    def broken_replace(src: str, dst: Any) -> None:
        raise OSError("disk went away")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk went away"):
        store.put("a/b.txt", b"new")

    # Then the old bytes are intact and the temporary file was removed
    assert store.get("a/b.txt") == b"old"
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b.txt"]


def test_local_blob_keys_with_names_at_and_over_the_file_system_limit(tmp_path: Path) -> None:
    # Given a local store, a key whose file name is 250 bytes (legal: 255 is the limit) and the
    # same key with the sidecar suffix (264 bytes: no such file can exist on this file system)
    store = LocalBlobStore(tmp_path)
    key = "incoming/" + "a" * 246 + ".txt"
    longer = key + ".metadata.json"
    # When the first is written / Then it reads back (the temporary file's name does not repeat it)
    store.put(key, b"doc")
    assert (store.get(key), store.exists(key)) == (b"doc", True)
    # And the longer key is simply absent: not there, its delete does nothing, no metadata
    assert store.exists(longer) is False
    with pytest.raises(NotFound, match="blob not found"):
        store.get(longer)
    store.delete(longer)
    with pytest.raises(NotFound):
        store.metadata(longer)
    # And writing it fails naming the key, leaving nothing behind
    with pytest.raises(OSError, match="cannot store blob 'incoming/a+\\.txt\\.metadata\\.json': a name in it is too long"):
        store.put(longer, b"{}")
    assert sorted(p.name for p in (tmp_path / "incoming").iterdir()) == ["a" * 246 + ".txt"]


def test_local_blob_readers_never_see_a_partial_write(tmp_path: Path) -> None:
    # Given a blob alternating between two 2 MB payloads written by one thread
    store = LocalBlobStore(tmp_path)
    payloads = (b"A" * 2_000_000, b"B" * 2_000_000)
    store.put("big.bin", payloads[0])
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            store.put("big.bin", payloads[i % 2])

    thread = threading.Thread(target=writer)
    thread.start()
    # When another thread reads it repeatedly
    try:
        seen = {store.get("big.bin") in payloads for _ in range(200)}
    finally:
        stop.set()
        thread.join()
    # Then every read returned one whole payload
    assert seen == {True}


def test_s3_blob_client_is_created_once(aws_env: None) -> None:
    # Given an S3 store without an injected client
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        store = S3BlobStore(BUCKET)
        # When it is used twice / Then the same lazily created client serves both calls
        store.put("a", b"1")
        first = store.client
        store.put("b", b"2")
        assert store.client is first
        assert store.get("a") == b"1"


def test_s3_blob_metadata_returns_the_user_metadata_set_at_upload(aws_env: None) -> None:
    # Given objects uploaded with user metadata, as `aws s3 cp --metadata doc-type=policy,...` does
    # (names in any case; a non-ASCII value RFC 2047 encoded, as S3 returns such values)
    with mock_aws():
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        client.put_object(Bucket=BUCKET, Key="incoming/policy.pdf", Body=b"%PDF-1.7",
                          Metadata={"Doc-Type": "policy", "line-of-business": "home", "term": "2024"})
        client.put_object(Bucket=BUCKET, Key="incoming/haus.pdf", Body=b"%PDF-1.7",
                          Metadata={"line-of-business": "=?UTF-8?B?R2Viw6R1ZGU=?="})
        store = S3BlobStore(BUCKET)
        # When the store reads their metadata
        policy = store.metadata("incoming/policy.pdf")
        haus = store.metadata("incoming/haus.pdf")
    # Then the names come back lower-cased without the x-amz-meta- prefix, values unchanged
    assert policy == {"doc-type": "policy", "line-of-business": "home", "term": "2024"}
    # And the encoded value is decoded to its text
    assert haus == {"line-of-business": "Gebäude"}


# ------------------------------------------------------------------------- StateStore


def test_state_adapters_satisfy_the_port(state: StateStore) -> None:
    # Given an adapter / Then it is a StateStore by the runtime-checkable Protocol
    assert isinstance(state, StateStore)


def test_documents_latest_pointer_follows_last_put(state: StateStore) -> None:
    # Given no document / Then lookups return None
    assert state.get_document("msa") is None
    # When version 1 is ingested, then version 2
    v1, v2 = make_document("1111aaaa1111aaaa"), make_document("2222bbbb2222bbbb", pages=9)
    state.put_document(v1)
    assert state.get_document("msa") == v1
    state.put_document(v2)
    # Then latest is v2, and both versions stay readable by version
    assert state.get_document("msa") == v2
    assert state.get_document("msa", "1111aaaa1111aaaa") == v1
    assert state.get_document("msa", "2222bbbb2222bbbb") == v2
    assert state.get_document("msa", "ffffffffffffffff") is None
    assert state.get_document("other") is None


def test_document_replace_same_version_updates_status(state: StateStore) -> None:
    # Given a document being ingested
    state.put_document(make_document("1111aaaa1111aaaa", status="INGESTING"))
    # When the same version is replaced as FAILED with a reason
    failed = make_document("1111aaaa1111aaaa", status="FAILED").model_copy(
        update={"reason": "encrypted PDF"})
    state.put_document(failed)
    # Then the stored record is the replacement
    got = state.get_document("msa")
    assert got is not None and got.status == "FAILED" and got.reason == "encrypted PDF"


def test_list_document_versions_returns_every_version_with_progress(state: StateStore) -> None:
    # Given two versions of one document (the newer one mid-ingest with progress) and another document
    v1 = make_document("1111aaaa1111aaaa").model_copy(update={"updated_at": "2025-01-01T00:00:00+00:00"})
    v2 = make_document("2222bbbb2222bbbb", status="INGESTING").model_copy(
        update={"updated_at": "2025-02-01T00:00:00+00:00", "stage": "upserting", "embedded": 40,
                "upserted": 20, "reused": 35, "previous_version": "1111aaaa1111aaaa",
                "timings": {"embed": "1.250"}})
    state.put_document(v2)
    state.put_document(v1)
    state.put_document(make_document("3333cccc3333cccc").model_copy(update={"doc_id": "other"}))
    # When the versions of "msa" are listed
    versions = state.list_document_versions("msa")
    # Then both come back, oldest first, progress fields intact; unknown documents list nothing
    assert versions == [v1, v2]
    assert state.list_document_versions("nothing-here") == []


def test_replace_document_writes_only_over_the_entry_it_expects(state: StateStore) -> None:
    # Given a version registered by a conditional write on an empty registry (a second one loses)
    ingesting = make_document("1111aaaa1111aaaa", status="INGESTING")
    first = state.replace_document(ingesting, None)
    assert first is not None and first.revision == 1 and state.get_document("msa") == first
    assert state.replace_document(ingesting, None) is None
    # When the ingest saves progress over the entry it wrote, it succeeds and the revision goes up
    progress = state.replace_document(first.model_copy(update={"upserted": 4}), first)
    assert progress is not None and (progress.revision, state.get_document("msa").upserted) == (2, 4)
    # And a writer still holding the older entry is refused, nothing written
    assert state.replace_document(first.model_copy(update={"upserted": 9}), first) is None
    assert state.get_document("msa") == progress
    # When the source's removal marks the version DELETED (an unconditional put of what it read)
    state.put_document(progress.model_copy(update={"status": "DELETED", "upserted": 0}))
    # Then the ingest's next save (READY) is refused and the DELETED mark stays
    assert state.replace_document(progress.model_copy(update={"status": "READY"}), progress) is None
    deleted = state.get_document("msa", "1111aaaa1111aaaa")
    assert deleted.status == "DELETED"
    # And a new ingest that read the DELETED entry may write over it
    again = state.replace_document(ingesting, deleted)
    assert again is not None and again.revision == 3 and state.get_document("msa").status == "INGESTING"


def test_replace_document_matches_an_entry_written_before_revisions(state: StateStore) -> None:
    # Given an entry written by put_document (revision 0, as every entry before revisions)
    old = make_document("1111aaaa1111aaaa", status="FAILED")
    state.put_document(old)
    # When an ingest that read it writes over it, Then it succeeds; a stale status is refused
    assert state.replace_document(old.model_copy(update={"status": "INGESTING"}), old.model_copy(
        update={"status": "INGESTING"})) is None
    written = state.replace_document(old.model_copy(update={"status": "INGESTING"}), old)
    assert written is not None and written.revision == 1 and state.get_document("msa") == written


def test_racing_replacements_of_one_entry_have_exactly_one_winner(state: StateStore) -> None:
    # Given one entry and eight writers that all read it
    base = state.replace_document(make_document("1111aaaa1111aaaa", status="INGESTING"), None)
    assert base is not None
    barrier = threading.Barrier(8)
    won: list[int] = []

    def write(n: int) -> None:
        barrier.wait()
        if state.replace_document(base.model_copy(update={"upserted": n}), base) is not None:
            won.append(n)

    # When they write over it at once
    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then exactly one wrote, and the stored entry is the winner's
    assert len(won) == 1 and state.get_document("msa").upserted == won[0]


def test_runs_round_trip(state: StateStore) -> None:
    # Given a run with exact facts
    run = RunRecord(run_id="run-7", doc_id="msa", doc_version="abcd1234abcd1234",
                    clause_types=["governing_law"], status="RUNNING", model="baseline",
                    facts={"monthly_fee": EXACT}, created_at="2025-01-31T12:00:00+00:00")
    assert state.get_run("run-7") is None
    # When stored, then replaced with a final status
    state.put_run(run)
    assert state.get_run("run-7") == run
    done = run.model_copy(update={"status": "SUCCEEDED", "execution_arn": "arn:aws:states:x"})
    state.put_run(done)
    # Then the replacement is returned and the exact value is unchanged
    got = state.get_run("run-7")
    assert got == done
    assert got is not None and got.facts["monthly_fee"].encode() == b"$247.83"


def test_checkpoint_versions_advance_one_by_one(state: StateStore) -> None:
    # Given no checkpoint
    assert state.load_checkpoint("run-1") is None
    # When versions 1, 2 and 3 are saved in order
    for version in (1, 2, 3):
        checkpoint = make_checkpoint(version, decision=f"session {version}")
        state.save_checkpoint(checkpoint)
        # Then each load returns exactly what was saved
        assert state.load_checkpoint("run-1") == checkpoint
    # And skipping or repeating a version conflicts
    with pytest.raises(CheckpointConflict):
        state.save_checkpoint(make_checkpoint(5))
    with pytest.raises(CheckpointConflict):
        state.save_checkpoint(make_checkpoint(3))
    with pytest.raises(CheckpointConflict):
        state.save_checkpoint(make_checkpoint(1))
    loaded = state.load_checkpoint("run-1")
    assert loaded is not None and loaded.version == 3


def test_checkpoint_conflicting_writers_exactly_one_wins(state: StateStore) -> None:
    # Given version 1 saved
    state.save_checkpoint(make_checkpoint(1))
    # When two writers both save version 2
    winner, loser = make_checkpoint(2, decision="writer A"), make_checkpoint(2, decision="writer B")
    state.save_checkpoint(winner)
    with pytest.raises(CheckpointConflict, match="run-1"):
        state.save_checkpoint(loser)
    # Then the first writer's checkpoint is the stored one
    assert state.load_checkpoint("run-1") == winner


def test_checkpoint_first_save_conflicts_when_one_exists(state: StateStore) -> None:
    # Given two invocations that both start a run
    state.save_checkpoint(make_checkpoint(1, decision="A"))
    # When the second also saves version 1 / Then it loses
    with pytest.raises(CheckpointConflict):
        state.save_checkpoint(make_checkpoint(1, decision="B"))
    loaded = state.load_checkpoint("run-1")
    assert loaded is not None and loaded.case_facts.decisions == ["A"]


def test_checkpoint_schema_mismatch_raises(state: StateStore) -> None:
    # Given a checkpoint written by code with another CASE_FACTS schema version
    state.save_checkpoint(make_checkpoint(1, schema_version=CASE_FACTS_SCHEMA_VERSION + 41))
    # When it is loaded / Then CheckpointSchemaError names both versions
    with pytest.raises(CheckpointSchemaError) as info:
        state.load_checkpoint("run-1")
    message = str(info.value)
    assert str(CASE_FACTS_SCHEMA_VERSION + 41) in message
    assert f"schema_version {CASE_FACTS_SCHEMA_VERSION}" in message


def test_checkpoint_schema_version_1_is_migrated_not_misread(state: StateStore) -> None:
    # Given a checkpoint written by the first release (CASE_FACTS schema_version 1, no instance fields)
    old = make_checkpoint(1, schema_version=1)
    body = json.loads(old.model_dump_json())
    for field in ("open", "retrieval_pages"):
        body["case_facts"].pop(field)
    body["case_facts"]["resolved"]["governing_law"].pop("instances")
    state.save_checkpoint(old)  # creates the row; its body is then replaced by the old-format JSON
    _overwrite_checkpoint_body(state, "run-1", json.dumps(body))
    # When it is loaded
    loaded = state.load_checkpoint("run-1")
    # Then it reads as the current schema with empty instance fields and every old value intact
    assert loaded is not None and loaded.case_facts.schema_version == CASE_FACTS_SCHEMA_VERSION
    assert loaded.case_facts.open == {} and loaded.case_facts.retrieval_pages == {}
    assert loaded.case_facts.resolved["governing_law"].pages == [7]
    assert loaded.case_facts.exact_values == {"monthly_fee": EXACT}


def test_found_instances_of_one_clause_type_are_separate_items(state: StateStore) -> None:
    # Given two instances of one clause type and one not_found type
    first = make_extraction("termination", quote="either party may terminate on notice").model_copy(
        update={"instance": "aaa111", "final": False})
    second = make_extraction("termination", quote="the customer may terminate for breach").model_copy(
        update={"instance": "bbb222"})
    state.put_extraction("run-1", first)
    state.put_extraction("run-1", second)
    state.put_extraction("run-1", second)  # a retried write
    # Then both instances are stored once each, in first-write order
    assert state.list_extractions("run-1") == [first, second]
    assert [e.key for e in state.list_extractions("run-1")] == ["termination#aaa111", "termination#bbb222"]


def test_exact_value_round_trips_byte_identical(state: StateStore) -> None:
    # Given a checkpoint and an extraction carrying "$247.83"
    checkpoint = make_checkpoint(1)
    extraction = make_extraction("payment_terms", quote=f"a monthly fee of {EXACT}")
    # When both are stored and read back
    state.save_checkpoint(checkpoint)
    state.put_extraction("run-1", extraction)
    loaded = state.load_checkpoint("run-1")
    [listed] = state.list_extractions("run-1")
    # Then the serialised forms are byte-identical to the originals
    assert loaded is not None
    assert loaded.case_facts.exact_values["monthly_fee"].encode() == b"$247.83"
    assert loaded.model_dump_json() == checkpoint.model_dump_json()
    assert listed.model_dump_json() == extraction.model_dump_json()
    assert listed.citations[0].quote.endswith("$247.83")


def test_extractions_overwrite_by_clause_type_and_keep_first_order(state: StateStore) -> None:
    # Given extractions written for three clause types, deliberately not alphabetical
    state.put_extraction("run-1", make_extraction("termination"))
    state.put_extraction("run-1", make_extraction("governing_law"))
    state.put_extraction("run-1", make_extraction("assignment"))
    # When the first clause type is written again with new content
    replacement = make_extraction("termination", quote="either party may terminate")
    state.put_extraction("run-1", replacement)
    # Then there is one item per clause type, in first-write order, with the new content
    listed = state.list_extractions("run-1")
    assert [e.clause_type for e in listed] == ["termination", "governing_law", "assignment"]
    assert listed[0] == replacement
    # And other runs are unaffected
    assert state.list_extractions("run-2") == []


def test_not_found_extraction_round_trips(state: StateStore) -> None:
    # Given a not_found extraction / When stored / Then it reads back equal
    missing = Extraction(clause_type="non_compete", status="not_found", model="baseline")
    state.put_extraction("run-1", missing)
    assert state.list_extractions("run-1") == [missing]


# ------------------------------------------------------------------ ingest claims


def test_claim_version_has_one_holder_until_it_is_released(state: StateStore) -> None:
    # Given worker A holding the ingest claim of a version
    assert state.claim_version("contract", "v1", "worker-a", 120) is True
    # When worker B asks for it / Then B is refused while A may renew
    assert state.claim_version("contract", "v1", "worker-b", 120) is False
    assert state.claim_version("contract", "v1", "worker-a", 120) is True
    # And another version of the same document is claimed independently
    assert state.claim_version("contract", "v2", "worker-b", 120) is True
    # When B releases a claim it does not hold, nothing changes; when A releases, B gets it
    state.release_version("contract", "v1", "worker-b")
    assert state.claim_version("contract", "v1", "worker-b", 120) is False
    state.release_version("contract", "v1", "worker-a")
    assert state.claim_version("contract", "v1", "worker-b", 120) is True
    # And claims are never listed as document versions
    assert state.list_document_versions("contract") == []


def test_an_expired_claim_is_taken_over(state: StateStore) -> None:
    # Given a claim whose lease is already over (its holder was killed without releasing)
    assert state.claim_version("contract", "v1", "killed-worker", -5) is True
    # Then the next worker takes it
    assert state.claim_version("contract", "v1", "worker-b", 120) is True
    assert state.claim_version("contract", "v1", "killed-worker", 120) is False


def test_the_claim_owner_is_readable_while_its_lease_runs(state: StateStore) -> None:
    # Given no claim, then worker A's live claim, then a claim whose lease is over
    assert state.version_claim_owner("contract", "v1") is None
    assert state.claim_version("contract", "v1", "worker-a", 120)
    assert state.claim_version("contract", "v2", "worker-b", -5)
    # Then the live one names its owner and the ended one reads as none
    assert state.version_claim_owner("contract", "v1") == "worker-a"
    assert state.version_claim_owner("contract", "v2") is None


def test_a_live_claim_of_a_process_gone_from_this_host_is_taken_over_only_locally(state: StateStore) -> None:
    # Given a live claim (120 s lease) held by a local process that was killed (`kill -9`)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    dead = f"{socket.gethostname()}:{proc.pid}:0badcafe"
    assert state.claim_version("contract", "v1", dead, 120) is True
    # And a live claim of a process that runs (this one, another attempt)
    alive = f"{socket.gethostname()}:{os.getpid()}:0000beef"
    assert state.claim_version("contract", "v2", alive, 120) is True
    # When another worker asks for both
    taken = state.claim_version("contract", "v1", "worker-b", 120)
    # Then SQLite (one machine) takes the dead holder's claim over at once; DynamoDB waits
    # for the lease as before (Lambda host names and pids say nothing across sandboxes)
    local = isinstance(state, SqliteStateStore)
    assert taken is local
    assert state.version_claim_owner("contract", "v1") == ("worker-b" if local else dead)
    # And a running holder keeps its claim in both
    assert state.claim_version("contract", "v2", "worker-b", 120) is False
    assert state.version_claim_owner("contract", "v2") == alive


def test_racing_claims_have_exactly_one_winner(state: StateStore) -> None:
    # Given eight workers asking for the same version at the same moment
    workers = 8
    barrier = threading.Barrier(workers)
    won: list[str] = []

    def claim(n: int) -> None:
        barrier.wait()
        if state.claim_version("contract", "v1", f"worker-{n}", 120):
            won.append(f"worker-{n}")

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then exactly one holds it
    assert len(won) == 1


# ------------------------------------------------------------------------- DynamoDB only


def test_dynamo_items_use_the_documented_layout_and_ttl(aws_env: None) -> None:
    # Given a DynamoDB store on a moto table
    with mock_aws():
        client = boto3.client("dynamodb")
        create_table(client)
        store = DynamoStateStore(TABLE, client=client)
        # When a document, a run, a checkpoint and an extraction are written
        store.put_document(make_document("1111aaaa1111aaaa"))
        store.put_run(RunRecord(run_id="run-1", doc_id="msa", doc_version="1111aaaa1111aaaa",
                                clause_types=["governing_law"]))
        store.save_checkpoint(make_checkpoint(1))
        store.put_extraction("run-1", make_extraction("governing_law"))
        in_progress = client.get_item(TableName=TABLE, Key={"pk": {"S": "RUN#run-1"}, "sk": {"S": "CHECKPOINT"}})["Item"]
        # And the run ends: its last checkpoint carries the expiry
        before = int(time.time())
        store.save_checkpoint(make_checkpoint(2).model_copy(update={"expires_at": checkpoint_expiry()}))
        items = {(i["pk"]["S"], i["sk"]["S"]): i for i in client.scan(TableName=TABLE)["Items"]}
        # And a redriven run saves again without expiry
        store.save_checkpoint(make_checkpoint(3))
        resumed = client.get_item(TableName=TABLE, Key={"pk": {"S": "RUN#run-1"}, "sk": {"S": "CHECKPOINT"}})["Item"]

    # Then the keys match the single-table layout
    assert set(items) == {
        ("DOC#msa", "VERSION#1111aaaa1111aaaa"), ("DOC#msa", "LATEST"),
        ("RUN#run-1", "RUN"), ("RUN#run-1", "CHECKPOINT"), ("RUN#run-1", "EXTRACTION#governing_law"),
    }
    assert items[("DOC#msa", "LATEST")]["doc_version"] == {"S": "1111aaaa1111aaaa"}
    assert items[("DOC#msa", "VERSION#1111aaaa1111aaaa")]["status"] == {"S": "READY"}
    assert items[("RUN#run-1", "RUN")]["status"] == {"S": "PENDING"}
    # And a checkpoint in progress never expires; the ended run's has an integer expires_at 30 days ahead
    assert "expires_at" not in in_progress and "expires_at" not in resumed
    checkpoint = items[("RUN#run-1", "CHECKPOINT")]
    assert checkpoint["version"] == {"N": "2"}
    expires_at = checkpoint["expires_at"]["N"]
    assert expires_at.isdigit()
    assert before + CHECKPOINT_TTL_SECONDS <= int(expires_at) <= int(time.time()) + CHECKPOINT_TTL_SECONDS
    assert CHECKPOINT_TTL_SECONDS == 30 * 86_400
    # And results never expire
    for key, item in items.items():
        if key[1] != "CHECKPOINT":
            assert "expires_at" not in item, key
    # And the extraction keeps its first-write order as an integer
    extraction = items[("RUN#run-1", "EXTRACTION#governing_law")]
    assert extraction["order"]["N"].isdigit() and extraction["created_at"]["S"].endswith("+00:00")


def test_dynamo_extraction_overwrite_keeps_order_and_created_at(aws_env: None) -> None:
    # Given one extraction written once
    with mock_aws():
        client = boto3.client("dynamodb")
        create_table(client)
        store = DynamoStateStore(TABLE, client=client)
        key = {"pk": {"S": "RUN#run-1"}, "sk": {"S": "EXTRACTION#governing_law"}}
        store.put_extraction("run-1", make_extraction("governing_law"))
        first = client.get_item(TableName=TABLE, Key=key)["Item"]
        # When it is written again
        store.put_extraction("run-1", make_extraction("governing_law", quote="laws of New York"))
        second = client.get_item(TableName=TABLE, Key=key)["Item"]
    # Then order and created_at are unchanged and the body is the new one
    assert second["order"] == first["order"]
    assert second["created_at"] == first["created_at"]
    assert "laws of New York" in second["body"]["S"]


# ------------------------------------------------------------------------- SQLite only


def race_checkpoint_saves(store: StateStore, version: int, writers: int) -> dict[int, str]:
    """Let ``writers`` threads save ``version`` at the same moment; return writer -> outcome."""
    barrier = threading.Barrier(writers)
    outcomes: dict[int, str] = {}

    def save(writer: int) -> None:
        candidate = make_checkpoint(version, decision=f"writer {writer}")
        barrier.wait()
        try:
            store.save_checkpoint(candidate)
            outcomes[writer] = "won"
        except CheckpointConflict:
            outcomes[writer] = "conflict"

    threads = [threading.Thread(target=save, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_sqlite_threads_racing_save_checkpoint(tmp_path: Path) -> None:
    # Given a SQLite store shared by eight threads and a saved version 1
    store = SqliteStateStore(tmp_path / "race.sqlite3")
    store.save_checkpoint(make_checkpoint(1))
    for version in (2, 3, 4):
        # When all threads save the same next version at once
        outcomes = race_checkpoint_saves(store, version, writers=8)
        # Then exactly one wins, the rest get CheckpointConflict, and the winner is stored
        winners = [w for w, outcome in outcomes.items() if outcome == "won"]
        assert len(outcomes) == 8 and len(winners) == 1
        loaded = store.load_checkpoint("run-1")
        assert loaded is not None and loaded.version == version
        assert loaded.case_facts.decisions == [f"writer {winners[0]}"]


def test_sqlite_threads_writing_extractions_lose_nothing(tmp_path: Path) -> None:
    # Given a SQLite store used from six threads at once
    store = SqliteStateStore(tmp_path / "x.sqlite3")
    names = [f"clause_{i:02d}" for i in range(6)]
    threads = [threading.Thread(target=store.put_extraction, args=("run-1", make_extraction(n)))
               for n in names]
    # When every thread writes a different clause type
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then all six are stored once each
    assert sorted(e.clause_type for e in store.list_extractions("run-1")) == names


def test_sqlite_uses_wal_and_survives_reopen(tmp_path: Path) -> None:
    # Given a store with a run written
    path = tmp_path / "state.sqlite3"
    SqliteStateStore(path).put_run(RunRecord(run_id="r", doc_id="d", doc_version="v",
                                             clause_types=["a"]))
    # When the file is opened again by a new instance
    reopened = SqliteStateStore(path)
    # Then the run is there and the journal mode is WAL
    assert reopened.get_run("r") is not None
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


# ------------------------------------------------------------------------- StateStore: the run lease


def test_run_lease_has_one_live_owner(state: StateStore) -> None:
    # Given no lease on a run / Then none is stored
    assert state.get_run_lease("run-9") is None
    # When owner A takes it
    assert state.acquire_run_lease("run-9", "owner-a", 30) is True
    # Then B can neither take nor renew it, while A can take it again and renew it
    assert state.acquire_run_lease("run-9", "owner-b", 30) is False
    assert state.renew_run_lease("run-9", "owner-b", 30) is False
    assert state.acquire_run_lease("run-9", "owner-a", 30) is True
    assert state.renew_run_lease("run-9", "owner-a", 60) is True
    lease = state.get_run_lease("run-9")
    assert lease is not None and lease.owner == "owner-a" and lease.live(time.time())
    assert lease.expires_at > time.time() + 50
    # And other runs are unaffected
    assert state.acquire_run_lease("run-10", "owner-b", 30) is True


def test_an_expired_run_lease_is_taken_over_and_the_old_owner_cannot_renew(state: StateStore) -> None:
    # Given a lease whose owner stopped renewing it (a dead process)
    assert state.acquire_run_lease("run-9", "owner-a", 0.2)
    time.sleep(0.3)
    lease = state.get_run_lease("run-9")
    assert lease is not None and not lease.live(time.time())
    # When another owner takes it
    assert state.acquire_run_lease("run-9", "owner-b", 30) is True
    # Then the old owner can no longer renew or release it
    assert state.renew_run_lease("run-9", "owner-a", 30) is False
    state.release_run_lease("run-9", "owner-a")
    assert state.get_run_lease("run-9").owner == "owner-b"


def test_released_run_lease_is_free(state: StateStore) -> None:
    # Given a held lease / When its owner releases it
    assert state.acquire_run_lease("run-9", "owner-a", 30)
    state.release_run_lease("run-9", "owner-a")
    # Then it has ended (kept, with its generation, so the next owner's is higher), and anyone may take it
    lease = state.get_run_lease("run-9")
    assert lease is not None and lease.released and not lease.live(time.time()) and lease.generation == 1
    assert state.renew_run_lease("run-9", "owner-a", 30) is False
    assert state.acquire_run_lease("run-9", "owner-b", 30) is True
    assert state.get_run_lease("run-9").generation == 2


# ------------------------------------------------------------------------- StateStore: fencing (lease generation)


def _take_over(state: StateStore, run_id: str = "run-f") -> tuple[int, int]:
    """Owner A takes the lease and lets it expire; owner B takes it over. Returns (A's, B's) generation."""
    assert state.acquire_run_lease(run_id, "owner-a", 0.2)
    first = state.get_run_lease(run_id).generation
    time.sleep(0.3)
    assert state.acquire_run_lease(run_id, "owner-b", 30)
    return first, state.get_run_lease(run_id).generation


def test_the_lease_generation_goes_up_only_when_another_owner_takes_it(state: StateStore) -> None:
    # Given a first owner / Then its generation is 1, kept by its renewals and re-acquires
    assert state.acquire_run_lease("run-g", "owner-a", 30)
    assert state.get_run_lease("run-g").generation == 1
    assert state.renew_run_lease("run-g", "owner-a", 30) and state.acquire_run_lease("run-g", "owner-a", 30)
    assert state.get_run_lease("run-g").generation == 1
    # When another owner is refused while it is live, nothing changes
    assert state.acquire_run_lease("run-g", "owner-b", 30) is False
    assert state.get_run_lease("run-g").generation == 1
    # When the lease expires and B takes it over, the generation is one up; B's renewal keeps it
    state.release_run_lease("run-g", "owner-a")
    assert state.acquire_run_lease("run-g", "owner-b", 30)
    assert state.renew_run_lease("run-g", "owner-b", 30)
    lease = state.get_run_lease("run-g")
    assert (lease.owner, lease.generation) == ("owner-b", 2)


def test_a_stalled_writer_is_refused_after_a_takeover_and_the_new_holders_checkpoint_stands(state: StateStore) -> None:
    # Given owner A (generation 1) saved checkpoint 1, then stalled past its lease, and B took the run over
    assert state.acquire_run_lease("run-f", "owner-a", 0.2)
    state.save_checkpoint(make_checkpoint(1, run_id="run-f"), fence=1)
    time.sleep(0.3)
    assert state.acquire_run_lease("run-f", "owner-b", 30)
    generation = state.get_run_lease("run-f").generation
    assert generation == 2
    # When A comes back and writes checkpoint 2 with its old generation
    with pytest.raises(RunLeaseLost) as lost:
        state.save_checkpoint(make_checkpoint(2, run_id="run-f", decision="A, stale"), fence=1)
    # Then the write is refused, naming the run, A's generation and the holder now
    message = str(lost.value)
    assert "run run-f" in message and "generation 1" in message and "owner-b" in message and "generation 2" in message
    assert state.load_checkpoint("run-f").version == 1
    # And B's checkpoint 2 is accepted and stands
    state.save_checkpoint(make_checkpoint(2, run_id="run-f", decision="B, holder"), fence=generation)
    stored = state.load_checkpoint("run-f")
    assert stored.version == 2 and stored.case_facts.decisions == ["B, holder"]


def test_fenced_result_and_status_writes_are_refused_for_an_old_generation(state: StateStore) -> None:
    # Given a run taken over by B (A held generation 1, B holds 2) and B's run record
    old, new = _take_over(state)
    run = RunRecord(run_id="run-f", doc_id="msa", doc_version="abcd1234abcd1234", clause_types=["governing_law"],
                    model="baseline", max_tokens=1024, top_k=8, created_at="t0", updated_at="t0", status="RUNNING")
    state.put_run(run, fence=new)
    # When A writes an extraction and a FAILED status with its old generation
    with pytest.raises(RunLeaseLost):
        state.put_extraction("run-f", make_extraction("governing_law"), fence=old)
    with pytest.raises(RunLeaseLost):
        state.put_run(run.model_copy(update={"status": "FAILED", "error": "X"}), fence=old)
    # Then nothing of A's was written
    assert state.list_extractions("run-f") == []
    assert state.get_run("run-f").status == "RUNNING" and state.get_run("run-f").error is None
    # And B's writes with its generation go through; unfenced writes (no lease: AWS) are unchanged
    state.put_extraction("run-f", make_extraction("governing_law"), fence=new)
    assert [e.clause_type for e in state.list_extractions("run-f")] == ["governing_law"]
    state.put_run(run.model_copy(update={"status": "SUCCEEDED"}))
    assert state.get_run("run-f").status == "SUCCEEDED"


def test_a_fenced_write_for_a_run_without_a_lease_is_refused(state: StateStore) -> None:
    # Given no lease stored for a run / When a write is fenced with a generation
    with pytest.raises(RunLeaseLost, match="no lease is stored"):
        state.save_checkpoint(make_checkpoint(1, run_id="run-none"), fence=1)
    # Then nothing was written
    assert state.load_checkpoint("run-none") is None


def test_a_fenced_checkpoint_still_conflicts_on_its_version(state: StateStore) -> None:
    # Given the holder's lease and checkpoint 1
    assert state.acquire_run_lease("run-v", "owner-a", 30)
    state.save_checkpoint(make_checkpoint(1, run_id="run-v"), fence=1)
    # When the holder writes version 3 (version 2 was never stored) or version 1 again
    # Then the version rule still holds under the fence (CheckpointConflict, not RunLeaseLost)
    with pytest.raises(CheckpointConflict):
        state.save_checkpoint(make_checkpoint(3, run_id="run-v"), fence=1)
    with pytest.raises(CheckpointConflict):
        state.save_checkpoint(make_checkpoint(1, run_id="run-v"), fence=1)
    assert state.load_checkpoint("run-v").version == 1


def test_a_live_run_lease_of_a_dead_local_process_is_taken_over_only_locally(state: StateStore) -> None:
    # Given a live run lease (30 s) held by a local process that was killed (`kill -9`)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    dead = f"{socket.gethostname()}:{proc.pid}:0badcafe"
    assert state.acquire_run_lease("run-k", dead, 30)
    # When `runs resume` asks for it right away
    taken = state.acquire_run_lease("run-k", "owner-b", 30)
    # Then SQLite (one machine) takes it over at once, one generation up; DynamoDB waits for the lease
    local = isinstance(state, SqliteStateStore)
    assert taken is local
    lease = state.get_run_lease("run-k")
    assert (lease.owner, lease.generation) == (("owner-b", 2) if local else (dead, 1))
    # And a running holder (this process) keeps its lease in both
    alive = f"{socket.gethostname()}:{os.getpid()}:0000beef"
    assert state.acquire_run_lease("run-a", alive, 30)
    assert state.acquire_run_lease("run-a", "owner-b", 30) is False


def test_sqlite_racing_lease_acquisitions_have_exactly_one_winner(tmp_path: Path) -> None:
    # Given ten owners trying to take a free lease at once (SQLite: moto's DynamoDB is not a concurrency oracle)
    state = SqliteStateStore(tmp_path / "state.sqlite3")
    results: dict[str, bool] = {}
    barrier = threading.Barrier(10)

    def take(owner: str) -> None:
        barrier.wait()
        results[owner] = state.acquire_run_lease("run-race", owner, 30)

    threads = [threading.Thread(target=take, args=(f"owner-{i}",)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then exactly one got it, and the stored lease is the winner's
    winners = [o for o, ok in results.items() if ok]
    assert len(winners) == 1
    assert state.get_run_lease("run-race").owner == winners[0]



# ------------------------------------------------------- issue 26: collection index, runs in batches


def _in_collection(doc_id: str, collection: str | None, status: str = "READY") -> DocumentRecord:
    from longdoc.core.models import DocumentMetadata

    return make_document("1111aaaa1111aaaa", status=status).model_copy(
        update={"doc_id": doc_id, "metadata": DocumentMetadata(collection=collection)})


def test_documents_written_with_a_collection_are_indexed_and_queried_without_a_scan(state: StateStore) -> None:
    # Given three documents of two collections and one without, written as ingest writes them
    # (put_document and the conditional replace_document)
    state.put_document(_in_collection("wording-b", "Motor 2024"))
    state.put_document(_in_collection("wording-a", "Motor 2024"))
    assert state.replace_document(_in_collection("home-1", "Home"), None) is not None
    state.put_document(_in_collection("loose", None))
    # When the index is queried
    members, names = state.collection_members("Motor 2024"), state.collection_names()
    # Then each collection lists exactly its members, sorted, and the names are the two collections
    assert members == ["wording-a", "wording-b"]
    assert state.collection_members("Home") == ["home-1"]
    assert state.collection_members("Nope") == []
    assert names == ["Home", "Motor 2024"]
    # and writing a member again (a re-ingest, the backfill) lists it once
    state.put_document(_in_collection("wording-a", "Motor 2024"))
    state.index_collection_member("Motor 2024", "wording-a")
    assert state.collection_members("Motor 2024") == ["wording-a", "wording-b"]


def test_the_dynamo_collection_query_never_scans(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a DynamoDB store with a collection whose members were ingested, and Scan made to fail
    with mock_aws():
        create_table(boto3.client("dynamodb"))
        store = DynamoStateStore(TABLE)
        for n in range(3):
            store.put_document(_in_collection(f"doc-{n}", "Fleet"))
        monkeypatch.setattr(store.client, "scan", lambda **kw: pytest.fail("Scan called"), raising=False)
        # When triage loads the collection
        from longdoc.triage.collections import collection_names, load_collection

        members = load_collection(store, "Fleet")
        # Then its members come from the index (Query + one read per member), no Scan
        assert [m.doc_id for m in members] == ["doc-0", "doc-1", "doc-2"]
        assert collection_names(store) == {"Fleet": 3}


def test_put_runs_and_get_runs_handle_more_than_one_batch(state: StateStore) -> None:
    # Given 130 PENDING runs (more than 25 per BatchWriteItem and 100 per BatchGetItem)
    runs = [RunRecord(run_id=f"bulk-x-{n:05d}", doc_id=f"doc-{n}", doc_version="abcd1234abcd1234",
                      clause_types=["governing_law"], model="baseline", facts={"fee": EXACT},
                      created_at="2025-01-31T12:00:00+00:00") for n in range(130)]
    # When they are written at once and read back at once (with one id that does not exist)
    state.put_runs(runs)
    got = state.get_runs([r.run_id for r in runs] + ["bulk-x-missing"])
    # Then every run is stored as put_run would store it, and the missing one is left out
    assert len(got) == 130 and "bulk-x-missing" not in got
    assert got["bulk-x-00129"] == runs[129] == state.get_run("bulk-x-00129")


def test_dynamo_batch_write_retries_unprocessed_items_then_gives_up() -> None:
    # Given a client whose first BatchWriteItem answers two items unprocessed, then all done
    from longdoc.adapters.dynamo_batch import ATTEMPTS, batch_write
    from longdoc.core.errors import StoreBatchIncomplete

    calls: list[int] = []

    class Client:
        def __init__(self, give_up: bool) -> None:
            self.give_up = give_up

        def batch_write_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:  # noqa: N803 - boto3's name
            items = RequestItems["t"]
            calls.append(len(items))
            left = items[:2] if (self.give_up or len(calls) == 1) else []
            return {"UnprocessedItems": {"t": left} if left else {}}

    items = [{"pk": {"S": f"p{n}"}, "sk": {"S": "s"}} for n in range(30)]
    # When 30 items are written
    made = batch_write(Client(give_up=False), "t", items, sleep=lambda s: None)
    # Then they go as 25, the 2 unprocessed again, then 5: three calls, none over 25 items
    assert calls == [25, 2, 5] and made == 3
    # and a table that never takes the last items raises after ATTEMPTS calls for that chunk
    calls.clear()
    with pytest.raises(StoreBatchIncomplete, match="2 items unprocessed"):
        batch_write(Client(give_up=True), "t", items[:25], sleep=lambda s: None)
    assert len(calls) == ATTEMPTS
