"""``POST /triage`` through the API handler in-process (AWS mode against moto: S3 chunks, DynamoDB registry)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.config import function_settings
from longdoc.local.engine import LocalContext
from longdoc.local.lambda_runtime import load_handler
from tests.unit.triage_set import POLICY_SET, load_file

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def post(aws_stack, monkeypatch: pytest.MonkeyPatch):
    """The dev policy set's Markdown documents in moto's S3 and DynamoDB; ``post(body)`` -> (status, JSON)."""
    monkeypatch.setenv("LONGDOC_STATE_MACHINE_ARN", "arn:aws:states:us-east-1:123456789012:stateMachine:unused")
    function_settings.cache_clear()
    for path in sorted(POLICY_SET.glob("*.md")):
        load_file(wiring.blob_store(), wiring.state_store(), path)  # type: ignore[arg-type]
    event = json.loads((REPO / "events" / "api-post-triage.json").read_text())

    def call(body: Any) -> tuple[int, Any]:
        sent = {**event, "body": body if isinstance(body, str) else json.dumps(body)}
        response = load_handler("api").handler(sent, LocalContext(function_name="longdoc-dev-ApiFunction"))
        return response["statusCode"], json.loads(response["body"])

    return call


def test_the_sample_event_is_answered_synchronously(post) -> None:
    # Given events/api-post-triage.json (the April 2024 sewer back-up claim, the design's cost line)
    body = json.loads(json.loads((REPO / "events" / "api-post-triage.json").read_text())["body"])
    # When it is posted
    status, answer = post(body)
    # Then the answer comes back at once: the 2024 wording and its endorsement, the band, the baseline's refer
    assert status == 200
    assert answer["wording"]["doc_id"] == "homeowners-wording-2024"
    assert [e["doc_id"] for e in answer["endorsements"]] == ["homeowners-sewer-backup-endorsement-2024"]
    assert answer["budget"]["input_budget"] == 4360 and answer["ranking"] == "bm25"
    assert (answer["decision"], answer["baseline"]) == ("refer", True) and answer["band"]["clauses"]


@pytest.mark.parametrize(("body", "status", "words"), [
    ({"collection": "nope", "claim": "Loss date: 2024-01-01\nPipe burst."}, 404, "unknown collection 'nope'"),
    ({"collection": "dev-policy-set", "claim": {"adjuster_note": "x", "loss_date": "2030-01-01"}}, 400,
     "no home wording of collection 'dev-policy-set' is in force on 2030-01-01"),
    ({"collection": "dev-policy-set", "claim": "x", "budget_tokens": 10, "cost_line": "0.005,1,4,160"}, 400,
     "invalid request"),
    ({"collection": "dev-policy-set", "claim": "Loss date: 2024-01-01\nPipe burst.", "cost_line": "0.005,1,4"}, 400,
     "cost line needs 4 values"),
])
def test_bad_requests_get_one_clear_message(post, body: dict, status: int, words: str) -> None:
    got, answer = post(body)
    assert got == status and words in answer["message"]
    assert "--" not in answer["message"]  # API callers send fields, not CLI flags


def test_a_claim_the_cli_takes_is_taken_and_one_over_its_cap_is_refused(post) -> None:
    # Given a long claim under the CLI's 200,000-byte claim-file cap (60,000 characters: over the old
    # API-only 50,000) and one just over it
    note = "Loss date: 2024-04-10\nSewage backed up through the basement floor drain. " + "Further detail. " * 3800
    assert 50_000 < len(note.encode()) < 200_000
    status, answer = post({"collection": "dev-policy-set", "claim": note, "budget_tokens": 40_000})
    # Then the first is triaged like the same file on the CLI (with a budget that holds it)
    assert status == 200 and answer["wording"]["doc_id"] == "homeowners-wording-2024"
    # And the second gets a 400 naming its size in bytes and the cap
    status, answer = post({"collection": "dev-policy-set", "claim": "é" * 100_001})
    assert (status, answer["message"]) == (400, "invalid request")
    assert any("claim is 200002 bytes of UTF-8; at most 200000" in e for e in answer["errors"])
