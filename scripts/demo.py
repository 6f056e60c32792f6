"""`make demo`: the main job on real documents, offline, with the commands a user would type.

Ingests a 14-page CUAD contract and a 44-page insurance policy wording from the shared
corpus, extracts clause types with the offline extractive baseline (no API key needed)
through the real state machine definition, prints a table per document and writes each
run's JSON result and HTML audit page (the cited PDF pages with the quotes boxed) under --out,
summarises the policy wording (the first statements with their citations; JSON and an HTML page
under --out), evaluates retrieval on the contract's gold cases (HTML page with its pictures under
--out), triages one claim against the dev policy set, then serves the API locally (`longdoc serve`),
runs a small bulk job over four CUAD contracts (`longdoc bulk --manifest`), makes one API call,
prints the answer, and lists the runs (`longdoc runs`).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from longdoc.cli import print_table

ROOT = Path(__file__).resolve().parents[1]
LONGDOC = [str(Path(sys.executable).with_name("longdoc"))]


def run(args: list[str], *, env: dict[str, str] | None = None, capture: bool = False,
        ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    shown = " ".join(shlex.quote(a) for a in ["longdoc", *args])
    print(f"\n$ {shown}", flush=True)
    proc = subprocess.run(LONGDOC + args, env={**os.environ, **(env or {})}, text=True,
                          stdout=subprocess.PIPE if capture else None)
    if proc.returncode not in ok:
        sys.exit(f"demo: `{shown}` failed with exit status {proc.returncode}")
    return proc


def summarize_policy(out: Path) -> None:
    """The summary step: the insurance wording summarised (map-reduce over its sections), first statements shown."""
    from longdoc.cli.summarize import print_summary

    doc_id = "chubb-travellershield-plus-policy-wording"
    page = out / f"{doc_id}-summary.html"
    result = json.loads(run(["summarize", doc_id, "--length", "short", "--html", str(page), "--json"],
                            capture=True).stdout)
    (out / f"{doc_id}-summary.json").write_text(json.dumps(result, indent=1, ensure_ascii=False))
    print_summary(result, limit=5)
    print(f"-> {page}: every citation opens the cited section's text on its page")


def http(method: str, url: str, body: dict | None = None) -> tuple[int, dict]:
    """One HTTP request with the standard library's client; returns (status, JSON body)."""
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def api_call(out: Path) -> None:
    """`longdoc serve` on a free loopback port, one POST /extractions, then GET until the run is done."""
    shown = "longdoc serve --port 0"
    print(f"\n$ {shown} &", flush=True)
    access_log = (out / "serve.log").open("w")  # Werkzeug's request log, kept out of the demo's output
    server = subprocess.Popen(LONGDOC + ["serve", "--port", "0"], stdout=subprocess.PIPE, stderr=access_log, text=True)
    try:
        line = server.stdout.readline() if server.stdout else ""
        print(line.rstrip())
        if not line.startswith("longdoc serve: http://"):
            sys.exit("demo: `longdoc serve` did not start")
        base = line.split()[2]
        body = {"doc_id": "urscorpnew-cooperation-agreement", "clause_types": ["Governing Law", "Notice Period To Terminate Renewal"]}
        print(f"\n$ curl -X POST {base}/extractions -H 'Content-Type: application/json' -d '{json.dumps(body)}'")
        status, answer = http("POST", f"{base}/extractions", body)
        print(f"HTTP {status} {json.dumps(answer)}")
        if status != 202:
            sys.exit("demo: the API did not accept the extraction")
        print(f"\n$ curl {base}/extractions/{answer['run_id']}   (repeated until the run is done)")
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            status, result = http("GET", f"{base}/extractions/{answer['run_id']}")
            if result.get("status") in ("SUCCEEDED", "FAILED"):
                break
            time.sleep(2)
        print(f"HTTP {status} status {result.get('status')}, {len(result.get('extractions', []))} extraction(s)")
        print_table(result)
        (out / "api-extraction.json").write_text(json.dumps(result, indent=1, ensure_ascii=False))
    finally:
        server.terminate()
        server.wait(timeout=30)
        access_log.close()


def review_step(run_id: str) -> None:
    """The review queue of the contract's run (issue 29): low-confidence items and possible omissions."""
    print("\n== Review: items under the accept threshold and every possible omission, lowest confidence first ==")
    run(["review", "list", "--run", run_id])
    print("review page: http://127.0.0.1:8080/review  (`longdoc serve --port 8080`)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--out", type=Path, default=ROOT / "out")
    args = parser.parse_args()
    corpus = args.corpus.resolve()
    contract = corpus / "cuad" / "urscorpnew-cooperation-agreement.pdf"
    policy = corpus / "chubb-travellershield-plus-policy-wording.pdf"
    for path in (contract, policy):
        if not path.is_file():
            sys.exit(f"demo: {path} is missing (pass --corpus DIR)")
    args.out.mkdir(parents=True, exist_ok=True)
    model = "Claude" if os.environ.get("ANTHROPIC_API_KEY") else "the offline extractive baseline (no API key set)"
    print(f"longdoc demo: data in {os.environ.get('LONGDOC_HOME', '.longdoc')}, model: {model}")

    run(["ingest", str(contract), str(policy)])
    run(["chunks", "urscorpnew-cooperation-agreement"])

    jobs = [
        ("urscorpnew-cooperation-agreement",
         "Agreement Date,Expiration Date,Governing Law,Non-Compete,Anti-Assignment,Audit Rights,Insurance,"
         "Source Code Escrow", ["--max-tokens", "600"], {}),
        ("chubb-travellershield-plus-policy-wording",
         "Pre-Existing Medical Conditions Exclusion,Policy Cancellation,Claims Notification Deadline,Governing Law",
         ["--fact", "claim_amount=$247.83", "--fact", "customer_id=cust_4711"],
         {"LONGDOC_CLAUSE_CATALOGUE": str(ROOT / "scripts" / "demo-policy-clause-types.yaml")}),
    ]
    run_ids: list[str] = []
    for doc_id, clause_types, extra, env in jobs:
        result = run(["extract", doc_id, "--clause-types", clause_types, *extra, "--json"], env=env, capture=True)
        data = json.loads(result.stdout)
        run_ids.append(data["run_id"])
        print(f"run {data['run_id']}  {data['status']}  model {data['model']}")
        print_table(data)
        target = args.out / f"{doc_id}.json"
        target.write_text(json.dumps(data, indent=1, ensure_ascii=False))
        found = sum(e["status"] == "found" for e in data["extractions"])
        print(f"-> {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}: "
              f"{found} found, {len(data['extractions']) - found} not_found, {data['sessions']} session(s), "
              f"{data['checkpoints']} checkpoint(s), execution history in {data['execution']['history']}")
        page = args.out / f"{doc_id}.html"
        run(["report", data["run_id"], "--html", str(page)])
    review_step(run_ids[0])
    summarize_policy(args.out)
    ocr_step(corpus)
    gold = corpus.parent / "gold" / "cuad-dev.jsonl"
    if gold.is_file():
        subset = args.out / "gold-urscorpnew.jsonl"
        subset.write_text("".join(line + "\n" for line in gold.read_text(encoding="utf-8").split("\n")
                                  if "urscorpnew-cooperation-agreement" in line), encoding="utf-8")
        run(["eval", "retrieval", "--gold", str(subset), "--corpus", str(corpus),
             "--html", str(args.out / "eval-retrieval.html")])
    triage_step(corpus, args.out)
    bulk_step(corpus, args.out)
    api_call(args.out)
    run(["runs"])
    print(f"\nHTML pages: {', '.join(str(p) for p in sorted(args.out.glob('*.html')))}")
    print("\nEvery quote above is verbatim from the cited chunk; `longdoc chunks DOC_ID --json` shows the chunks.")
    mcp_tools()
    return 0


def mcp_tools() -> None:
    """The MCP tools (issue 30), listed from the server object itself (no subprocess): name and first sentence."""
    import asyncio

    from longdoc.mcpserver.server import build_server

    tools = asyncio.run(build_server().list_tools())
    print(f"\n== MCP: `longdoc mcp` (stdio) and /mcp on `longdoc serve` serve {len(tools)} tools ==")
    for tool in tools:
        first = (tool.description or "").split(". ")[0].rstrip(".")
        print(f"  {tool.name:<18} {first}.")


def ocr_step(corpus: Path) -> None:
    """A scanned PDF (no text layer) ingested with OCR; one OCR-sourced chunk shown (page, confidence, text)."""
    scan = corpus / "bad" / "scanned-grumman-service-kit-no-text.pdf"
    if not scan.is_file():
        return
    run(["ingest", str(scan)])
    chunks = json.loads(run(["chunks", "scanned-grumman-service-kit-no-text", "--json"], capture=True).stdout)
    first = next((c for c in chunks if c.get("ocr")), None)
    if first is None:
        sys.exit("demo: the scanned file has no OCR-sourced chunk")
    text = " ".join(first["text"].split())
    print(f"{first['chunk_id']}  page {first['page_start']}  ocr {first['ocr']}  "
          f"mean word confidence {first['ocr_confidence']:.2f}\n  {text[:160]}…")


def triage_step(corpus: Path, out: Path) -> None:
    """Claim triage (issue 15): the dev policy set ingested with its sidecars, one claim triaged against it.

    The set is tests/data/triage/policy-set (homeowners 2023 and its 2024 reissue, a sewer
    back-up endorsement, built from the corpus homeowners wording) plus the corpus travel
    wording, copied under ``out/policy-set`` beside their ``.metadata.json`` sidecars.
    """
    import shutil

    source = ROOT / "tests" / "data" / "triage" / "policy-set"
    folder = out / "policy-set"
    folder.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        shutil.copy2(item, folder / item.name)
    shutil.copy2(corpus / "chubb-travellershield-plus-policy-wording.pdf", folder)
    documents = sorted(str(p) for p in folder.iterdir() if not p.name.endswith(".metadata.json"))
    print("\n== Claim triage: a sewer back-up claim against the wording in force of a policy set ==")
    run(["ingest", *documents], env={"LONGDOC_CHUNK_TARGET_TOKENS": "300", "LONGDOC_CHUNK_MAX_TOKENS": "400"})
    run(["collections", "show", "dev-policy-set"])
    run(["triage", "--collection", "dev-policy-set", "--claim",
         str(ROOT / "tests" / "data" / "triage" / "claims" / "sewer-backup-2024.json"),
         "--cost-line", "0.005,1,4,160", "--explain"])


def bulk_step(corpus: Path, out: Path, documents: int = 4) -> None:
    """Bulk extraction (issue 14): a few CUAD contracts ingested, then one bulk job over a manifest
    (the Message Batches path; offline the batches are answered locally), its summary table printed."""
    contracts = sorted((corpus / "cuad").glob("*.pdf"))[:documents]
    print(f"\n== Bulk extraction: {len(contracts)} CUAD contracts in one job (Message Batches rounds) ==")
    ingested = run(["ingest", *map(str, contracts), "--json"], capture=True).stdout.splitlines()
    manifest = out / "bulk-manifest.txt"
    manifest.write_text("".join(json.loads(line)["doc_id"] + "\n" for line in ingested if line.strip()),
                        encoding="utf-8")
    # exit status 1: a document failed as it would synchronously (listed with its reason in the table)
    run(["bulk", "--clause-types", "Agreement Date,Governing Law,Anti-Assignment,Insurance", "--manifest",
         str(manifest)], ok=(0, 1))


if __name__ == "__main__":
    sys.exit(main())
