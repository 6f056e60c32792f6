"""`make demo`: the main job on real documents, offline, with the commands a user would type.

Ingests a 14-page CUAD contract and a 44-page insurance policy wording from the shared
corpus, extracts clause types with the offline extractive baseline (no API key needed)
through the real state machine definition, prints a table per document and writes each
run's JSON result and HTML audit page under --out, summarises the policy wording (the first
statements with their citations; JSON and an HTML page under --out), then evaluates retrieval
on the contract's gold cases (HTML heat map under --out).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from longdoc.cli import print_table

ROOT = Path(__file__).resolve().parents[1]
LONGDOC = [str(Path(sys.executable).with_name("longdoc"))]


def run(args: list[str], *, env: dict[str, str] | None = None, capture: bool = False) -> subprocess.CompletedProcess:
    shown = " ".join(shlex.quote(a) for a in ["longdoc", *args])
    print(f"\n$ {shown}", flush=True)
    proc = subprocess.run(LONGDOC + args, env={**os.environ, **(env or {})}, text=True,
                          stdout=subprocess.PIPE if capture else None)
    if proc.returncode != 0:
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
    for doc_id, clause_types, extra, env in jobs:
        result = run(["extract", doc_id, "--clause-types", clause_types, *extra, "--json"], env=env, capture=True)
        data = json.loads(result.stdout)
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
    summarize_policy(args.out)
    gold = corpus.parent / "gold" / "cuad-dev.jsonl"
    if gold.is_file():
        subset = args.out / "gold-urscorpnew.jsonl"
        subset.write_text("".join(line + "\n" for line in gold.read_text(encoding="utf-8").split("\n")
                                  if "urscorpnew-cooperation-agreement" in line), encoding="utf-8")
        run(["eval", "retrieval", "--gold", str(subset), "--corpus", str(corpus),
             "--html", str(args.out / "eval-retrieval.html")])
    triage_step(corpus, args.out)
    print(f"\nHTML pages: {', '.join(str(p) for p in sorted(args.out.glob('*.html')))}")
    print("\nEvery quote above is verbatim from the cited chunk; `longdoc chunks DOC_ID --json` shows the chunks.")
    return 0


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


if __name__ == "__main__":
    sys.exit(main())
