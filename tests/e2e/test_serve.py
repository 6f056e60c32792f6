"""``longdoc serve`` driven over real HTTP on loopback: the API function's own contract, served locally.

Given a local home with a small contract ingested and ``longdoc serve`` started as its own
process on a free loopback port, when an HTTP client (``urllib``) calls the API, then it gets
what API Gateway + the API function answer on AWS: 202 and a run that finishes in the
background, the same run for a reused Idempotency-Key (422 for another body), 400 naming the
field for a bad body (the API's contract: Powertools validation mapped to 400 by
``functions/api/app.py``), 404 for an unknown route, 413 for a body over the limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.cli import main

pytestmark = pytest.mark.slow

DOC = "cuad/urscorpnew-cooperation-agreement.pdf"
DOC_ID = "urscorpnew-cooperation-agreement"
BODY_LIMIT = 4096
SERVE = [sys.executable, "-c", "import sys; from longdoc.cli import main; sys.exit(main())", "serve"]


@pytest.fixture(scope="module")
def served(tmp_path_factory, corpus_dir: Path) -> Iterator[dict[str, Any]]:
    """A home with the contract ingested, and ``longdoc serve --port 0`` running on it: ``{"url", "home", "env"}``."""
    home = tmp_path_factory.mktemp("serve-home")
    env = {**os.environ, "LONGDOC_HOME": str(home), "LONGDOC_MODEL": "baseline"}
    env.pop("ANTHROPIC_API_KEY", None)
    mp = pytest.MonkeyPatch()
    for key in ("LONGDOC_HOME", "LONGDOC_MODEL"):
        mp.setenv(key, env[key])
    mp.delenv("ANTHROPIC_API_KEY", raising=False)
    wiring.reset()
    assert main(["ingest", str(corpus_dir / DOC)]) == 0
    proc = subprocess.Popen([*SERVE, "--port", "0", "--max-body-bytes", str(BODY_LIMIT)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("longdoc serve: http://127.0.0.1:"), line + (proc.stderr.read() if proc.stderr else "")
        yield {"url": line.split()[2], "home": home, "env": env}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        mp.undo()
        wiring.reset()


def call(url: str, method: str = "GET", body: Any = None, headers: dict[str, str] | None = None,
         raw: bytes | None = None) -> tuple[int, Any, dict[str, str]]:
    """One HTTP request; returns (status, parsed JSON body or text, headers)."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            status, payload, got = response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        status, payload, got = error.code, error.read(), dict(error.headers)
    text = payload.decode("utf-8")
    try:
        return status, json.loads(text), got
    except ValueError:
        return status, text, got


def test_post_answers_at_once_and_get_shows_the_run_finish(served) -> None:
    # Given the served API
    url = served["url"]
    # When an extraction is posted
    started = time.monotonic()
    status, body, _ = call(f"{url}/extractions", "POST", {"doc_id": DOC_ID, "clause_types": ["Governing Law"]})
    # Then it is accepted at once (the run goes on in a background worker)
    assert status == 202, body
    assert time.monotonic() - started < 20
    assert body["status"] == "RUNNING" and body["run_id"].startswith("run-")
    assert body["execution_arn"].endswith(f":{body['run_id']}")
    # And GET shows its progress, then the finished run with a cited extraction
    seen = set()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        status, run, _ = call(f"{url}/extractions/{body['run_id']}")
        assert status == 200
        seen.add(run["status"])
        if run["status"] in ("SUCCEEDED", "FAILED"):
            break
        time.sleep(1)
    assert run["status"] == "SUCCEEDED", run
    assert "RUNNING" in seen
    [extraction] = run["extractions"]
    assert extraction["clause_type"] == "Governing Law" and extraction["status"] == "found"
    assert extraction["citations"][0]["quote"]
    # And the worker wrote the run's execution history where `longdoc runs show` reads it
    assert (served["home"] / "runs" / body["run_id"] / "history.json").is_file()


def test_a_reused_idempotency_key_is_the_same_run_and_another_body_is_422(served) -> None:
    url, key = served["url"], {"Idempotency-Key": "serve-test-key-1"}
    body = {"doc_id": DOC_ID, "clause_types": ["Audit Rights"]}
    # Given a run started with an Idempotency-Key
    status, first, _ = call(f"{url}/extractions", "POST", body, key)
    assert status == 202, first
    # When the same key and body come again (a client retry)
    status, again, _ = call(f"{url}/extractions", "POST", body, {"idempotency-key": key["Idempotency-Key"]})
    # Then the same run is answered
    assert status == 202 and again["run_id"] == first["run_id"]
    # When the key comes with another body
    status, conflict, _ = call(f"{url}/extractions", "POST", {**body, "clause_types": ["Insurance"]}, key)
    # Then 422 names the header and the key's run
    assert status == 422, conflict
    assert conflict["field"] == "Idempotency-Key" and conflict["run_id"] == first["run_id"]


@pytest.mark.parametrize("body, field", [
    ({"doc_id": DOC_ID, "clause_types": "Governing Law"}, "clause_types"),
    ({"doc_id": DOC_ID}, "clause_types"),
    ({"doc_id": DOC_ID, "clause_types": ["Governing Law"], "top_k": 0}, "top_k"),
], ids=["not-a-list", "missing", "out-of-range"])
def test_a_bad_body_is_400_naming_the_field(served, body, field) -> None:
    # When a body that fails validation is posted / Then the API's own answer: 400 with the field named
    status, answer, headers = call(f"{served['url']}/extractions", "POST", body)
    assert status == 400, answer
    assert answer["message"] == "invalid request" and field in answer["fields"]
    assert headers["Content-Type"] == "application/json"


def test_malformed_json_is_400(served) -> None:
    status, answer, _ = call(f"{served['url']}/extractions", "POST", raw=b"{not json")
    assert status == 400 and any("JSON" in e for e in answer["errors"]) and answer["fields"] == ["body"]


def test_unknown_route_and_unknown_run_are_404(served) -> None:
    status, answer, _ = call(f"{served['url']}/no/such/route")
    assert status == 404 and answer == {"message": "no such route: GET /no/such/route"}
    status, answer, _ = call(f"{served['url']}/extractions/run-ffffffffffffffff")
    assert status == 404 and "run-ffffffffffffffff" in answer["message"]


def test_a_body_over_the_limit_is_413_and_one_at_the_limit_is_not(served) -> None:
    url = f"{served['url']}/extractions"
    # When a body one byte over the limit is posted / Then 413, before the handler runs
    status, answer, _ = call(url, "POST", raw=b" " * (BODY_LIMIT + 1))
    assert status == 413 and answer["limit_bytes"] == BODY_LIMIT
    # And a body of exactly the limit reaches the handler (which judges it)
    body = json.dumps({"doc_id": "x" * 10, "clause_types": ["Governing Law"]}).encode()
    status, answer, _ = call(url, "POST", raw=body + b" " * (BODY_LIMIT - len(body)))
    assert status == 404 and "xxxxxxxxxx" in answer["message"]


def test_openapi_document_and_docs_page(served) -> None:
    status, spec, _ = call(f"{served['url']}/openapi.json")
    assert status == 200 and spec["openapi"].startswith("3.") and "/extractions" in spec["paths"]
    status, page, headers = call(f"{served['url']}/docs")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    # And the page shows every route and the request body schema, with no external asset (no network here)
    assert "/extractions/{run_id}" in page and "/documents/{doc_id}" in page and "clause_types" in page
    assert "<script" not in page and "src=" not in page and "cdn" not in page.lower()


def test_binding_beyond_loopback_warns(monkeypatch, capsys, tmp_path) -> None:
    # Given a server that stops at once (nothing is bound)
    import werkzeug.serving

    served_by: list[dict[str, str]] = []

    class Stub:
        server_port = 8080

        def serve_forever(self) -> None:
            served_by.append({m: type(wiring.execution_starter(m)).__name__ for m in ("extract", "summarize", "bulk")})
            raise KeyboardInterrupt

        def server_close(self) -> None:
            pass

    monkeypatch.setattr(werkzeug.serving, "make_server", lambda *a, **k: Stub())
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path))
    wiring.reset()
    # When serve is asked to listen on every interface, then on loopback
    assert main(["serve", "--host", "0.0.0.0", "--port", "8080"]) == 0
    wide = capsys.readouterr().err
    assert main(["serve", "--port", "8080"]) == 0
    narrow = capsys.readouterr().err
    wiring.reset()
    # Then only the first warns
    assert "WARNING: listening on 0.0.0.0, not loopback" in wide
    assert "WARNING" not in narrow
    # And while serving, wiring's starters were local workers; afterwards Step Functions is back (here
    # without an ARN), and no handler module was given a starter of its own
    from longdoc.core.errors import ConfigError
    from longdoc.local.lambda_runtime import load_handler

    local = {"extract": "BackgroundStarter", "summarize": "MachineStarter", "bulk": "MachineStarter"}
    assert served_by == [local, local]
    monkeypatch.delenv("LONGDOC_STATE_MACHINE_ARN", raising=False)
    wiring.reset()
    with pytest.raises(ConfigError, match="LONGDOC_STATE_MACHINE_ARN must be set"):
        wiring.execution_starter("extract")
    assert not hasattr(load_handler("api"), "_starter")
    assert not any(hasattr(sys.modules[r], "_starter") for r in ("summary_routes", "bulk_routes"))


def test_stopping_serve_stops_its_running_extractions_and_says_how_to_resume(served) -> None:
    # Given a second server on the same home with a run just started
    proc = subprocess.Popen([*SERVE, "--port", "0"], env=served["env"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().split()[2] if proc.stdout else ""
        status, body, _ = call(f"{url}/extractions", "POST", {"doc_id": DOC_ID, "clause_types": ["Insurance"]})
        assert status == 202, body
    finally:
        # When it is stopped with SIGTERM (as `kill` does)
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    # Then it stops the worker and says how to continue the run
    assert proc.returncode == 0
    assert "stopped 1 running extraction(s)" in err and "longdoc runs resume RUN_ID" in err


def poll(url: str, done: set[str], timeout: float = 240.0) -> dict[str, Any]:
    """GET ``url`` until its ``status`` is in ``done`` (or the timeout passes); returns the last body."""
    deadline = time.monotonic() + timeout
    while True:
        status, body, _ = call(url)
        assert status == 200, body
        if body.get("status") in done or time.monotonic() > deadline:
            return body
        time.sleep(1.0)


def test_a_summary_started_over_http_runs_in_the_background(served) -> None:
    # Given the served home holding the ingested contract
    # When a summary is asked for over HTTP
    status, body, _ = call(f"{served['url']}/summaries", "POST", {"doc_id": DOC_ID, "length": "short"})
    # Then it is accepted at once with a local execution, and finishes in a background worker
    assert status == 202, body
    assert body["execution_arn"].endswith(":longdoc-local-summarize:" + body["execution_arn"].rsplit(":", 1)[1])
    result = poll(f"{served['url']}/summaries/{body['summary_id']}", {"SUCCEEDED", "FAILED"})
    assert result["status"] == "SUCCEEDED", result
    assert result["doc_id"] == DOC_ID and result["statements"]
    assert all(s["citations"] for s in result["statements"])


def test_a_bulk_extraction_started_over_http_runs_in_the_background(served) -> None:
    # Given the served home holding the ingested contract
    # When a bulk job over it and an unknown id is posted
    status, body, _ = call(f"{served['url']}/bulk-extractions", "POST",
                           {"doc_ids": [DOC_ID, "no-such-doc"], "clause_types": ["Insurance", "Governing Law"]},
                           headers={"Idempotency-Key": "serve-bulk-1"})
    # Then it is accepted (the request stored; issue 26: the machine's first state creates the runs),
    # its one document ends in a background worker, and the unknown id is rejected with its reason
    assert status == 202, body
    assert (body["status"], body["requested"]) == ("CREATING", 2)
    result = poll(f"{served['url']}/bulk-extractions/{body['bulk_id']}", {"SUCCEEDED", "FAILED"})
    assert (result["status"], result["done"], result["failed"], result["pending"]) == ("SUCCEEDED", 1, 0, 0), result
    assert [d["doc_id"] for d in result["documents"]] == [DOC_ID]
    assert [r["where"] for r in result["rejected"]] == ["no-such-doc"]


def test_a_replayed_bulk_request_starts_no_second_execution(served) -> None:
    # Given a bulk job just posted with an Idempotency-Key
    body = {"doc_ids": [DOC_ID], "clause_types": ["Governing Law"]}
    first = call(f"{served['url']}/bulk-extractions", "POST", body, headers={"Idempotency-Key": "serve-bulk-replay"})
    # When the same request is replayed at once, before the first worker has run
    again = call(f"{served['url']}/bulk-extractions", "POST", body, headers={"Idempotency-Key": "serve-bulk-replay"})
    # Then both answer 202 with the same job, and one worker (one execution) runs it to the end
    assert (first[0], again[0]) == (202, 202) and first[1]["bulk_id"] == again[1]["bulk_id"]
    bulk_id = first[1]["bulk_id"]
    result = poll(f"{served['url']}/bulk-extractions/{bulk_id}", {"SUCCEEDED", "FAILED"})
    assert (result["status"], result["done"], result["failed"]) == ("SUCCEEDED", 1, 0), result
    [log] = list((Path(served["home"]) / "workers").glob(f"bulk-{bulk_id}*.log"))
    time.sleep(5)  # a second worker, had one started, would have finished by now
    outcomes = [line for line in log.read_text().splitlines() if line.startswith('{"name"')]
    assert len(outcomes) == 1 and json.loads(outcomes[0])["status"] == "SUCCEEDED"
