"""The API Lambda handler in-process: API Gateway REST proxy events in, HTTP responses out.

AWS mode against moto (DynamoDB for the registry and runs, Step Functions for executions;
moto records executions without running them). The state machine is created from the
real ASL file. Events are built from ``events/api-*.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from longdoc import wiring
from longdoc.adapters.baseline import BASELINE_NAME
from longdoc.local.lambda_runtime import load_handler
from longdoc.config import function_settings
from longdoc.local.engine import LocalContext
from longdoc.core.models import DocumentRecord

# Known noise: handlers that publish no metric on a path make Powertools warn "No application metrics".
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

REPO = Path(__file__).resolve().parents[2]
ACCOUNT = "123456789012"
EXTRACT_ARN = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:longdoc-dev-ExtractFunction"


@dataclass
class StateMachine:
    """The moto state machine the API starts executions on."""

    client: Any
    arn: str

    def executions(self) -> list[dict[str, Any]]:
        """Executions started so far (newest first, as ListExecutions returns them)."""
        return self.client.list_executions(stateMachineArn=self.arn)["executions"]


@pytest.fixture
def sfn(aws_stack, monkeypatch: pytest.MonkeyPatch) -> Iterator[StateMachine]:
    """A moto state machine built from statemachine/extract.asl.json; its ARN is in the settings."""
    client = boto3.client("stepfunctions", region_name="us-east-1")
    definition = (REPO / "statemachine" / "extract.asl.json").read_text().replace("${ExtractFunctionArn}", EXTRACT_ARN)
    arn = client.create_state_machine(name="longdoc-dev-extract", definition=definition,
                                      roleArn=f"arn:aws:iam::{ACCOUNT}:role/longdoc-dev-sfn")["stateMachineArn"]
    monkeypatch.setenv("LONGDOC_STATE_MACHINE_ARN", arn)
    function_settings.cache_clear()
    wiring.step_functions_starter.cache_clear()  # never reuse a client from another test's moto context
    yield StateMachine(client, arn)
    wiring.step_functions_starter.cache_clear()


@pytest.fixture
def api(sfn):
    """Call the API handler: ``api(method, path, body=None, headers=None)`` -> (status, parsed body)."""
    handler = load_handler("api").handler
    post = json.loads((REPO / "events" / "api-post-extractions.json").read_text())
    get = json.loads((REPO / "events" / "api-get-extraction.json").read_text())

    def call(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
             resource: str | None = None, path_parameters: dict[str, str] | None = None) -> tuple[int, Any]:
        event = json.loads(json.dumps(post if method == "POST" else get))
        base = {k: v for k, v in event["headers"].items() if k not in ("Idempotency-Key", "Content-Type")}
        if method == "POST":
            base["Content-Type"] = "application/json"
        base.update(headers or {})
        event.update(path=path, httpMethod=method, resource=resource or path, pathParameters=path_parameters,
                     headers=base, multiValueHeaders={k: [v] for k, v in base.items()},
                     body=body if body is None or isinstance(body, str) else json.dumps(body))
        event["requestContext"].update(path=f"/dev{path}", resourcePath=resource or path, httpMethod=method)
        response = handler(event, LocalContext(function_name="longdoc-dev-ApiFunction"))
        return response["statusCode"], json.loads(response["body"]) if response.get("body") else None

    return call


def run_items(stack) -> list[dict[str, Any]]:
    """Run items (``pk`` = ``RUN#...``) in the table."""
    return [i for i in stack.items() if i["pk"]["S"].startswith("RUN#")]


def request(doc: DocumentRecord, **extra: Any) -> dict[str, Any]:
    """A POST /extractions body for ``doc``."""
    return {"doc_id": doc.doc_id, "clause_types": ["Governing Law", "Cap On Liability"], **extra}


def test_post_starts_a_run_and_an_execution(api, sfn, ingested_contract: DocumentRecord, load_event) -> None:
    # Given the POST event of events/api-post-extractions.json, unchanged (IAM-signed, Idempotency-Key, facts)
    event = load_event("api-post-extractions.json")
    body = json.loads(event["body"])
    assert body["doc_id"] == ingested_contract.doc_id

    # When API Gateway delivers it to the function
    response = load_handler("api").handler(event, LocalContext(function_name="longdoc-dev-ApiFunction"))
    status, payload = response["statusCode"], json.loads(response["body"])

    # Then the API accepts it (202) with the run id and the execution that runs it
    assert status == 202
    run_id = payload["run_id"]
    assert run_id.startswith("run-") and payload["status"] == "RUNNING"
    assert payload["execution_arn"] == f"arn:aws:states:us-east-1:{ACCOUNT}:execution:longdoc-dev-extract:{run_id}"
    [execution] = sfn.executions()
    assert execution["name"] == run_id
    started = json.loads(sfn.client.describe_execution(executionArn=payload["execution_arn"])["input"])
    assert started == {"run_id": run_id, "doc_id": ingested_contract.doc_id, "iteration": 0, "max_iterations": 40,
                       "execution_iterations": 0, "iterations_per_execution": 500, "generation": 1}
    # And the run is stored with the resolved request
    run = wiring.state_store().get_run(run_id)
    assert (run.status, run.doc_version, run.model) == ("RUNNING", ingested_contract.doc_version, BASELINE_NAME)
    assert run.clause_types == body["clause_types"]
    assert run.facts == {"monthly fee": "$247.83"}
    assert run.execution_arn == payload["execution_arn"]


def test_same_idempotency_key_returns_the_same_run(api, sfn, ingested_contract: DocumentRecord) -> None:
    # Given a run started with an Idempotency-Key
    headers = {"Idempotency-Key": "7c1e2a9f-5b3d-4e6a-8f0c-112233445566"}
    status, first = api("POST", "/extractions", request(ingested_contract), headers=headers)
    assert status == 202

    # When the client retries with the same key (sent lower-case, as HTTP/2 clients do)
    status, second = api("POST", "/extractions", request(ingested_contract),
                         headers={"idempotency-key": headers["Idempotency-Key"]})

    # Then it gets the same run and no second execution is started
    assert status == 202
    assert second == first
    assert len(sfn.executions()) == 1


def test_idempotency_key_reused_with_another_body_is_422(api, sfn, ingested_contract: DocumentRecord) -> None:
    # Given a run started with an Idempotency-Key
    headers = {"Idempotency-Key": "0f0e0d0c-aaaa-4bbb-8ccc-000000000001"}
    status, first = api("POST", "/extractions", request(ingested_contract), headers=headers)
    assert status == 202
    # When the same key comes back with a different body
    other = {**request(ingested_contract), "clause_types": ["Cap On Liability"]}
    status, body = api("POST", "/extractions", other, headers=headers)
    # Then the API answers 422 naming the header and the existing run, and starts nothing new
    assert status == 422, body
    assert body["field"] == "Idempotency-Key" and body["run_id"] == first["run_id"]
    assert len(sfn.executions()) == 1


def test_without_a_key_the_same_body_is_the_same_run(api, sfn, ingested_contract: DocumentRecord) -> None:
    # Given a run started without an Idempotency-Key
    _, first = api("POST", "/extractions", request(ingested_contract))

    # When the same request arrives again, formatted differently
    same = json.dumps({"clause_types": ["Governing Law", "Cap On Liability"], "doc_id": ingested_contract.doc_id},
                      indent=4)
    status, second = api("POST", "/extractions", same)
    # and a different request arrives
    _, other = api("POST", "/extractions", request(ingested_contract, top_k=3))

    # Then the repeat maps to the same run and execution; the different request starts its own
    assert status == 202
    assert second["run_id"] == first["run_id"]
    assert other["run_id"] != first["run_id"]
    assert sorted(e["name"] for e in sfn.executions()) == sorted([first["run_id"], other["run_id"]])


@pytest.mark.parametrize(
    "body",
    [
        {"doc_id": "herimports-maintenance-agreement"},
        {"doc_id": "herimports-maintenance-agreement", "clause_types": "Governing Law"},
        {"doc_id": "herimports-maintenance-agreement", "clause_types": []},
    ],
    ids=["missing", "not-a-list", "empty"],
)
def test_invalid_clause_types_are_400_naming_the_field(
    api, sfn, aws_stack, ingested_contract: DocumentRecord, body: dict[str, Any]
) -> None:
    # Given a body whose clause_types is missing, not a list, or empty
    # When it is posted
    status, payload = api("POST", "/extractions", body)

    # Then the API answers 400 naming clause_types, and starts nothing
    assert status == 400
    assert payload["message"] == "invalid request"
    assert "clause_types" in payload["fields"]
    assert sfn.executions() == []
    assert run_items(aws_stack) == []


def test_malformed_json_is_400(api, sfn, ingested_contract: DocumentRecord) -> None:
    # Given a body that is not JSON
    # When it is posted
    status, payload = api("POST", "/extractions", "{not json")

    # Then the API answers 400 saying the JSON is bad, and starts nothing
    assert status == 400
    assert payload["message"] == "invalid request"
    assert any("JSON" in error for error in payload["errors"])
    assert payload["fields"] == ["body"]
    assert sfn.executions() == []


def test_unknown_clause_type_is_400_with_suggestions(api, sfn, aws_stack, ingested_contract: DocumentRecord) -> None:
    # Given a request with a misspelt clause type
    body = request(ingested_contract, clause_types=["Governing Law", "Governing Lwa"])

    # When it is posted
    status, payload = api("POST", "/extractions", body)

    # Then the API answers 400 naming the field and suggesting the close name, and starts nothing
    assert status == 400
    assert payload["field"] == "clause_types"
    assert "Governing Lwa" in payload["message"]
    assert payload["suggestions"][0] == "Governing Law"
    assert sfn.executions() == []
    assert run_items(aws_stack) == []


def test_unknown_document_is_404(api, sfn) -> None:
    # Given a request for a document that was never ingested
    # When it is posted
    status, payload = api("POST", "/extractions", {"doc_id": "no-such-contract", "clause_types": ["Governing Law"]})

    # Then the API answers 404 naming the document, and starts nothing
    assert status == 404
    assert "no-such-contract" in payload["message"]
    assert sfn.executions() == []


def test_get_extraction_reports_status_and_extractions(
    api, sfn, ingested_contract: DocumentRecord, load_event
) -> None:
    # Given a run started through the API
    _, started = api("POST", "/extractions", request(ingested_contract))
    run_id = started["run_id"]
    get = {"resource": "/extractions/{id}", "path_parameters": {"id": run_id}}

    # When it is read before any session ran
    status, before = api("GET", f"/extractions/{run_id}", **get)

    # Then it is RUNNING with no extractions yet
    assert status == 200
    assert (before["run_id"], before["status"], before["extractions"]) == (run_id, "RUNNING", [])

    # When the extract function runs a session for it (as the state machine would) and it is read again
    extract = load_handler("extract").handler
    task = load_event("sfn-extract-input.json") | {"run_id": run_id, "doc_id": ingested_contract.doc_id}
    assert extract(task, LocalContext(function_name="longdoc-dev-ExtractFunction"))["status"] == "DONE"
    status, after = api("GET", f"/extractions/{run_id}", **get)

    # Then it reports SUCCEEDED with one cited extraction per clause type
    assert status == 200
    assert after["status"] == "SUCCEEDED"
    assert [e["clause_type"] for e in after["extractions"]] == ["Governing Law", "Cap On Liability"]
    found = after["extractions"][0]
    assert found["status"] == "found" and found["citations"][0]["quote"]
    assert found["model"] == BASELINE_NAME
    assert after["sessions"] == 1 and after["usage"]["input_tokens"] > 0


def test_get_unknown_extraction_is_404(api, sfn, load_event) -> None:
    # Given the GET event of events/api-get-extraction.json, whose run id does not exist
    event = load_event("api-get-extraction.json")
    run_id = event["pathParameters"]["id"]

    # When API Gateway delivers it to the function
    response = load_handler("api").handler(event, LocalContext(function_name="longdoc-dev-ApiFunction"))

    # Then the API answers 404 naming the run, as JSON
    assert response["statusCode"] == 404
    assert run_id in json.loads(response["body"])["message"]
    # And the same answer comes for any unknown id
    status, _ = api("GET", "/extractions/run-ffffffffffffffff", resource="/extractions/{id}",
                    path_parameters={"id": "run-ffffffffffffffff"})
    assert status == 404


def test_get_document(api, sfn, ingested_contract: DocumentRecord) -> None:
    # Given an ingested document
    doc_id = ingested_contract.doc_id

    # When its registry entry and a missing one are read
    status, found = api("GET", f"/documents/{doc_id}", resource="/documents/{doc_id}",
                        path_parameters={"doc_id": doc_id})
    missing_status, missing = api("GET", "/documents/no-such-contract", resource="/documents/{doc_id}",
                                  path_parameters={"doc_id": "no-such-contract"})

    # Then the first is 200 with the READY entry and the second is 404
    assert status == 200
    assert (found["doc_id"], found["status"], found["doc_version"]) == (doc_id, "READY", ingested_contract.doc_version)
    assert (found["pages"], found["chunks"]) == (ingested_contract.pages, ingested_contract.chunks)
    assert missing_status == 404
    assert "no-such-contract" in missing["message"]


def test_openapi_document(api, sfn) -> None:
    # Given the API
    # When its OpenAPI document is requested
    status, spec = api("GET", "/openapi.json")

    # Then it is served with every route, including POST /extractions with its body schema
    assert status == 200
    assert spec["openapi"].startswith("3.")
    assert "/extractions" in spec["paths"]
    assert "post" in spec["paths"]["/extractions"]
    assert {"/extractions/{run_id}", "/documents/{doc_id}"} <= set(spec["paths"])
    assert "ExtractionRequest" in json.dumps(spec["components"])


def test_without_a_key_a_failed_run_does_not_block_a_new_attempt(api, sfn, ingested_contract: DocumentRecord) -> None:
    # Given a run started without a key that then failed
    _, first = api("POST", "/extractions", request(ingested_contract))
    state = wiring.state_store()
    state.put_run(state.get_run(first["run_id"]).model_copy(update={"status": "FAILED", "error": "NoProgress"}))

    # When the same request arrives again
    status, again = api("POST", "/extractions", request(ingested_contract))

    # Then a new run and execution start; the failed run is kept as it was
    assert status == 202 and again["run_id"] != first["run_id"] and again["status"] == "RUNNING"
    assert state.get_run(first["run_id"]).status == "FAILED"
    assert sorted(e["name"] for e in sfn.executions()) == sorted([first["run_id"], again["run_id"]])


def test_a_failed_start_execution_is_retried_by_the_next_request(
    api, sfn, ingested_contract: DocumentRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given Step Functions refusing the first StartExecution
    real = wiring.execution_starter("extract")

    class Flaky:
        calls = 0

        def start_execution(self, name: str, execution_input: dict[str, Any]) -> str:
            Flaky.calls += 1
            if Flaky.calls == 1:
                raise RuntimeError("throttled")
            return real.start_execution(name, execution_input)

    with wiring.overrides(starters={"extract": Flaky()}):
        with pytest.raises(RuntimeError):
            api("POST", "/extractions", request(ingested_contract), headers={"Idempotency-Key": "k-flaky"})
        assert sfn.executions() == []

        # When the client retries with the same key
        status, body = api("POST", "/extractions", request(ingested_contract), headers={"Idempotency-Key": "k-flaky"})

    # Then the execution starts now, under the run's own id
    assert status == 202 and body["execution_arn"] and body["status"] == "RUNNING"
    assert [e["name"] for e in sfn.executions()] == [body["run_id"]]


def test_a_body_that_is_not_utf8_is_a_400_not_a_crash(sfn) -> None:
    # Given the sample POST event whose body arrives base64-encoded and holds bytes that are not UTF-8
    import base64

    event = json.loads((REPO / "events" / "api-post-extractions.json").read_text())
    raw = b'{"doc_id": "\xff\xfe", "clause_types": ["Governing Law"]}'
    event.update(body=base64.b64encode(raw).decode(), isBase64Encoded=True)
    # When the API handler resolves it
    response = load_handler("api").handler(event, LocalContext(function_name="longdoc-dev-ApiFunction"))
    # Then it answers 400 naming the body, and no run starts
    assert response["statusCode"] == 400
    body = json.loads(response["body"])
    assert body["message"] == "invalid request" and body["fields"] == ["body"]
    assert "not UTF-8" in body["errors"][0]


@pytest.mark.parametrize("outage", ["ModelThrottled", "ModelUnavailable", "IndexUnavailable", "EmbeddingUnavailable"])
def test_an_outage_of_a_dependency_is_503_with_retry_after(api, sfn, ingested_contract: DocumentRecord,
                                                          monkeypatch: pytest.MonkeyPatch, outage: str) -> None:
    # Given a dependency that is down once the route reaches it (Claude 429/529 after the SDK's retries,
    # Pinecone or Voyage after the adapter's)
    from longdoc.core import errors

    def down(*args: Any, **kwargs: Any) -> Any:
        raise getattr(errors, outage)(f"{outage} from the test")

    monkeypatch.setattr(load_handler("api"), "start_extraction", down)
    # When a run is posted
    status, payload = api("POST", "/extractions", request(ingested_contract))
    # Then the answer is 503 (not the caller's fault: retry), naming the error and when to retry
    assert status == 503
    assert payload["error"] == outage and payload["retry_after_seconds"] == errors.OUTAGE_RETRY_AFTER_SECONDS
    assert f"{outage} from the test" in payload["message"] and sfn.executions() == []
