"""``POST /triage`` with the stack's ``Reranker=voyage``: the API function's BM25 top 60 reranked by Voyage.

AWS mode against moto (S3 chunks, DynamoDB registry, the Voyage key in Secrets Manager) and the
loopback Voyage fake (``tests/fakes/voyage_server.py``: the documented rerank request rules, scores by
word overlap), through the real REST adapter with its retries.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from longdoc import wiring
from longdoc.config import function_settings
from longdoc.local.engine import LocalContext
from longdoc.local.lambda_runtime import load_handler
from longdoc.triage.ranking import RERANK_INSTRUCTION
from tests.fakes.loopback import status
from tests.fakes.voyage_server import FakeVoyage, overlap_score
from tests.unit.triage_set import POLICY_SET, load_file

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]
REPO = Path(__file__).resolve().parents[2]
LATE_NOTICE = "The insured only reported the damage to us six weeks later, after the carpets had been thrown out."


@pytest.fixture
def post(aws_stack, voyage: FakeVoyage, monkeypatch: pytest.MonkeyPatch):
    """The dev policy set in moto; the API function's environment as the template sets it with
    ``Reranker=voyage`` (the Voyage secret's name, the rerank model), the SDK sent to the fake;
    ``post(body, reranker="voyage")`` -> (status, JSON)."""
    monkeypatch.setenv("LONGDOC_STATE_MACHINE_ARN", "arn:aws:states:us-east-1:123456789012:stateMachine:unused")
    monkeypatch.setenv("LONGDOC_VOYAGE_BASE_URL", voyage.url + "/v1")
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(
        Name="longdoc/voyage-api", SecretString=json.dumps({"api_key": "pa-test-not-a-real-key"}))
    for path in sorted(POLICY_SET.glob("*.md")):
        load_file(wiring.blob_store(), wiring.state_store(), path)  # type: ignore[arg-type]
    event = json.loads((REPO / "events" / "api-post-triage.json").read_text())

    def call(body: Any, reranker: str = "voyage") -> tuple[int, Any]:
        monkeypatch.setenv("LONGDOC_RERANKER", reranker)
        monkeypatch.setenv("LONGDOC_RERANK_MODEL", "rerank-2.5")
        if reranker == "voyage":
            monkeypatch.setenv("LONGDOC_VOYAGE_SECRET_NAME", "longdoc/voyage-api")
        else:
            monkeypatch.delenv("LONGDOC_VOYAGE_SECRET_NAME", raising=False)
        function_settings.cache_clear()
        wiring.reranker.cache_clear()
        sent = {**event, "body": json.dumps(body)}
        response = load_handler("api").handler(sent, LocalContext(function_name="longdoc-dev-ApiFunction"))
        return response["statusCode"], json.loads(response["body"])

    return call


def _claim() -> dict[str, Any]:
    return {"collection": "dev-policy-set", "claim": {
        "claim_id": "rr-1", "loss_date": "2024-04-11", "line_of_business": "home", "policy_number": "HO-2024-55501",
        "claimant": "Jane Placeholder",
        "claim_form": {"description": "Sewage backed up into the basement through the floor drain"},
        "adjuster_note": "The municipal sewer backed up during a storm and sewage came up through the floor drain. "
                         + LATE_NOTICE}}


def test_triage_reranks_the_bm25_top_with_the_claim_as_a_handler_reads_it(post, voyage: FakeVoyage) -> None:
    # Given the stack deployed with Reranker=voyage, When a claim with a late notice is posted
    status_code, answer = post(_claim())
    # Then one rerank request went to Voyage with the configured model and at most 60 clause units
    assert status_code == 200, answer
    calls = voyage.rerank_calls()
    assert len(calls) == 1
    call = calls[0]
    assert call["model"] == "rerank-2.5" and 2 <= len(call["documents"]) <= 60
    # And its query is the instruction, then the claim's description and the whole note: the late notice
    # sentence (a condition may decide the claim) is there, the policy number and the claimant's name are not
    assert call["query"].startswith(RERANK_INSTRUCTION + " Claim: Sewage backed up into the basement")
    assert LATE_NOTICE in call["query"]
    assert "HO-2024-55501" not in call["query"] and "Jane Placeholder" not in call["query"]
    # And the answer says it was reranked, with no warning, and its first clause is the one Voyage scored best
    assert answer["ranking"] == "bm25, reranked" and answer["warnings"] == []
    scores = [overlap_score(call["query"], d) for d in call["documents"]]
    best = call["documents"][scores.index(max(scores))]
    first = answer["band"]["clauses"][0]
    assert first["heading_path"][-1] in best


def test_the_rerank_changes_the_order_bm25_alone_gives(post, voyage: FakeVoyage) -> None:
    # Given the same claim triaged without a reranker and with it
    _, plain = post(_claim(), reranker="none")
    assert plain["ranking"] == "bm25" and voyage.rerank_calls() == []
    _, reranked = post(_claim())
    # Then the bands differ in order (the fake scores by the share of the query's words a clause holds)
    assert [c["clause_id"] for c in plain["band"]["clauses"]] != [c["clause_id"] for c in reranked["band"]["clauses"]]


@pytest.mark.parametrize(("faults", "error"), [
    ([status(503), status(503)], "RerankUnavailable"),
    ([status(401, "Provided API key is invalid.")], "RerankRequestError"),
])
def test_a_failed_rerank_still_answers_in_bm25_order_with_a_warning(post, voyage: FakeVoyage,
                                                                     faults: list, error: str) -> None:
    # Given the BM25-only answer for the claim
    _, plain = post(_claim(), reranker="none")
    # When Voyage is down for both of the route's attempts (or refuses the key)
    voyage.inject(*faults)
    status_code, answer = post(_claim())
    # Then the claim is still answered, in BM25 order, and the answer says why it was not reranked
    assert status_code == 200
    assert answer["ranking"] == "bm25"
    assert [c["clause_id"] for c in answer["band"]["clauses"]] == [c["clause_id"] for c in plain["band"]["clauses"]]
    assert len(answer["warnings"]) == 1 and answer["warnings"][0].startswith(f"the reranker failed ({error}")
    assert "pa-test-not-a-real-key" not in json.dumps(answer)
    assert voyage.pending_faults == 0  # the route made exactly as many attempts as faults queued (2 for a 503)


def test_the_route_bounds_the_rerank_for_a_caller_who_waits(post) -> None:
    # When the API function builds its triage reranker
    post(_claim(), reranker="voyage")
    reranker = wiring.reranker(True)
    # Then it makes 2 attempts of at most 6 s (inside API Gateway's 29 s), not the 3 x 15 s of extraction
    # (the 503 case above shows the route itself stops after the second attempt)
    voyage = reranker.inner  # type: ignore[attr-defined]  # behind the cool-down breaker
    assert (voyage._rest.max_attempts, voyage._rest._timeout) == (2, 6.0)
    plain = wiring.reranker()
    assert (plain._rest.max_attempts, plain._rest._timeout) == (3, 15)  # type: ignore[attr-defined]


def test_a_reranker_without_its_key_setting_is_a_server_error_not_the_callers(post, monkeypatch) -> None:
    # Given the API function told to rerank with Voyage but given no Voyage secret name and no key
    # (a deployment's mistake: the break-it test saw a 400, as if the caller had erred)
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    monkeypatch.setattr("longdoc.adapters.secrets.api_key", _no_key)
    status_code, answer = post(_claim())
    # Then the answer is a 500 that names the configuration problem
    assert status_code == 500
    assert answer["message"].startswith("server configuration error: ")


def _no_key(env_var: str, secret_name: str | None, refresh: bool = False) -> str:
    from longdoc.core.errors import ConfigError
    raise ConfigError(f"{env_var} is not set and no secret is configured")


def test_while_voyage_is_down_the_next_triage_does_not_wait_for_it_again(post, voyage: FakeVoyage) -> None:
    # Given one triage that found Voyage down (503 for both of the route's attempts), in a warm function
    voyage.inject(status(503), status(503))
    status_code, first = post(_claim())
    assert status_code == 200 and first["warnings"][0].startswith("the reranker failed (RerankUnavailable")
    calls = len(voyage.calls("POST", "/v1/rerank"))
    # When the next claim comes (the same process: post() resets the reranker, so call the handler again)
    from longdoc.local.engine import LocalContext
    from longdoc.local.lambda_runtime import load_handler
    event = json.loads((REPO / "events" / "api-post-triage.json").read_text())
    response = load_handler("api").handler({**event, "body": json.dumps(_claim())},
                                           LocalContext(function_name="longdoc-dev-ApiFunction"))
    second = json.loads(response["body"])
    # Then it answers in fused order at once, saying the reranker was not called, and Voyage got no request
    assert response["statusCode"] == 200 and second["ranking"] == "bm25"
    assert "not called: the reranker was unavailable" in second["warnings"][0]
    assert len(voyage.calls("POST", "/v1/rerank")) == calls
