"""``longdoc ingest`` / ``watch`` / ``chunks``: documents into the stores, and what they became."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from longdoc.core.errors import CliError
from longdoc.core.models import DocumentRecord

if TYPE_CHECKING:  # the watcher is imported by `longdoc watch` only
    from longdoc.local.watch import Outcome


def _not_ready(record: DocumentRecord) -> str:
    """Why a version is not READY, and what to do (:func:`~longdoc.core.documents.not_ready_reason`)."""
    from longdoc.core.documents import not_ready_reason

    return f"{record.status}: {not_ready_reason(record)}"


def ingest_one(path: Path) -> tuple[DocumentRecord, DocumentRecord | None, str, DocumentRecord | None]:
    """Ingest one file (and its sidecar) through the local runner (:mod:`longdoc.local.ingest_runner`).

    Returns ``(record, previous latest version, change, the same version before)``; ``change`` is
    :attr:`~longdoc.local.ingest_runner.LocalIngest.change`: ``"ingested"``, ``"unchanged"`` (same
    bytes and metadata already READY), ``"metadata updated"`` (same bytes, new metadata, chunks
    rewritten in place) or ``"re-chunked"`` (same bytes, now chunked with another profile).
    Raises :class:`CliError` naming the file when it is missing, its sidecar holds a bad
    value (the field named, even for bytes already READY, which keep their chunks and metadata;
    a version not READY is recorded FAILED with the reason), or it did not become READY.
    While another ``longdoc ingest`` of the same version runs, waits for it (said once on stderr);
    one that was killed (its process gone) is taken over at once (also said once).
    """
    from longdoc.core.errors import DocumentError
    from longdoc.ingest.lease import CLAIM_LEASE_SECONDS, claim_holder_pid
    from longdoc.local.ingest_runner import ingest_file, read_sidecar

    if path.is_dir():
        raise CliError(f"{path}: is a directory, not a file")
    if not path.is_file():
        raise CliError(f"{path}: no such file")
    try:
        done = ingest_file(path.name, path.read_bytes(), read_sidecar(path),
                           on_wait=lambda: print(f"longdoc: {path}: another ingest of this version is running; "
                                                 "waiting for it", file=sys.stderr, flush=True))
    except DocumentError as exc:
        raise CliError(f"{path}: {exc.reason}") from None
    if done.took_over_from is not None:
        print(f"longdoc: {path}: the earlier ingest of this version (pid {claim_holder_pid(done.took_over_from)}) "
              f"is no longer running; took its claim over at once instead of waiting out its "
              f"{CLAIM_LEASE_SECONDS:.0f} s lease", file=sys.stderr, flush=True)
    record = done.record
    if done.failure is not None or record is None:
        raise CliError(f"{path}: ingest failed, retry later: {done.failure or 'the version was not registered'}")
    if record.status != "READY":
        raise CliError(f"{path}: {record.reason if record.status == 'FAILED' and record.reason else _not_ready(record)}")
    return record, done.previous, done.change, done.before


def _state_text(done: str, before: DocumentRecord | None, record: DocumentRecord) -> str:
    """The human line's middle part for the change ``done`` (:attr:`~longdoc.local.ingest_runner.LocalIngest.change`)."""
    if done == "unchanged":
        return "unchanged (same bytes and metadata already READY)"
    if done == "metadata updated":
        return "metadata updated (same bytes: chunk metadata rewritten in place, nothing re-embedded)"
    if done == "re-chunked":
        was = before.chunking if before is not None and before.chunking else "the deployment's settings"
        changed = "; metadata updated" if before is not None and before.metadata != record.metadata else ""
        return f"re-chunked ({was} -> {record.chunking}: another chunk profile{changed})"
    return f"{record.reused} embeddings reused"


def overlap_warnings(record: DocumentRecord) -> list[str]:
    """One line per wording of the same collection and line of business in force on dates this one is too
    (:func:`longdoc.triage.overlaps.overlaps_of`): ingested anyway, but triage on those dates fails; for
    an endorsement, one line when its wording is not in the collection
    (:func:`longdoc.triage.overlaps.missing_wording`)."""
    from longdoc import wiring
    from longdoc.triage.overlaps import missing_wording, overlaps_of

    meta = record.metadata
    if not meta.collection:
        return []
    if meta.endorses:
        missing = missing_wording(wiring.state_store(), meta.collection, meta.endorses)
        return [missing] if missing else []
    return [o.message() for o in overlaps_of(wiring.state_store(), meta.collection, record.doc_id)]


def _watch_overlaps(outcome: object) -> None:
    """Print ``longdoc watch``'s warnings for a READY outcome on stderr, as ``longdoc ingest`` does: the
    version's own (a misspelt sidecar key, pages without text) and the overlaps (:func:`overlap_warnings`)."""
    from longdoc import wiring

    doc_id, version = getattr(outcome, "doc_id", None), getattr(outcome, "doc_version", None)
    record = wiring.state_store().get_document(doc_id, version) if doc_id and version else None
    for warning in [*record.warnings, *overlap_warnings(record)] if record is not None else []:
        print(f"longdoc: {getattr(outcome, 'path', doc_id)}: WARNING: {warning}", file=sys.stderr, flush=True)


def _report(args: argparse.Namespace, path: Path, record: DocumentRecord, previous: DocumentRecord | None,
            done: str, before: DocumentRecord | None = None) -> None:
    """Print one ingested file's row (``--json``: one JSON object) and its warnings on stderr."""
    if previous is not None and previous.doc_version != record.doc_version and previous.status == "READY":
        print(f"longdoc: {path}: {record.doc_id} now points at version {record.doc_version} "
              f"(was {previous.doc_version} from {previous.source}); older versions stay readable "
              f"with --version", file=sys.stderr)
    row: dict[str, object] = {"doc_id": record.doc_id, "doc_version": record.doc_version, "source": record.source,
                              "pages": record.pages, "chunks": record.chunks, "reused": record.reused,
                              "skipped": done == "unchanged", "change": done}
    if record.pages_needing_ocr:
        row["pages_needing_ocr"] = record.pages_needing_ocr
        print(f"longdoc: {path}: pages without a text layer (need OCR, not indexed): "
              f"{', '.join(map(str, record.pages_needing_ocr))}", file=sys.stderr)
    if record.page_outcomes:
        row["page_outcomes"] = {**record.page_outcomes, "furniture_lines": furniture_lines(record)}
        if record.furniture_lines and not args.json:
            print(f"longdoc: {path}: {furniture_summary(record)}", file=sys.stderr)
    if record.ocr_rotations:
        row["ocr_rotations"] = {str(page): turn for page, turn in sorted(record.ocr_rotations.items())}
    warnings = [*record.warnings, *overlap_warnings(record)]
    row["warnings"] = warnings
    for warning in warnings:
        print(f"longdoc: {path}: WARNING: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(row))
    else:
        print(f"{row['doc_id']}  v{row['doc_version']}  {row['pages']} pages  {row['chunks']} chunks  "
              f"{_state_text(done, before, record)}  ({path})")


def furniture_lines(record: DocumentRecord) -> dict[str, int]:
    """Lines removed as running headers and footers on every page of a PDF version, ``{"1": 2, "2": 0, ...}``
    (JSON object keys are strings; a page with none shows 0)."""
    return {str(page): record.furniture_lines.get(page, 0) for page in range(1, record.pages + 1)}


def furniture_summary(record: DocumentRecord) -> str:
    """One line saying how many lines were removed as running headers and footers, and from which pages
    (``12 lines removed as running headers and footers (not indexed): pages 1-6, 2 a page``)."""
    from longdoc.ingest.parse.damage import page_ranges

    counts = record.furniture_lines
    total, most, least = sum(counts.values()), max(counts.values()), min(counts.values())
    each = f"{most} a page" if most == least and len(counts) > 1 else f"up to {most} a page" if len(counts) > 1 else ""
    return (f"{total} line{'s' if total != 1 else ''} removed as running headers and footers (not indexed): "
            f"page{'s' if len(counts) > 1 else ''} {page_ranges(list(counts))}{', ' + each if each else ''}")


def cmd_ingest(args: argparse.Namespace) -> int:
    """Copy each file into the local bucket's ``incoming/`` and run the ingest handler on it.

    One bad file never stops the others: each failure is one line on stderr naming the file
    (with ``--json`` also a ``{"source", "change": "failed", "error"}`` line on stdout, so a script
    reading one JSON line per file sees it); the exit status is 1 when any file failed.
    """
    failures = 0
    for path in _documents(args.paths):
        if isinstance(path, str):  # a sidecar given without its document
            failures += 1
            _failed(args, path.split(": ", 1)[0], path)
            continue
        try:
            record, previous, done, before = ingest_one(path)
        except Exception as exc:  # one bad file never stops the others
            failures += 1
            reason = str(exc) if isinstance(exc, CliError) else f"{path}: {type(exc).__name__}: {exc}"
            _failed(args, str(path), reason)
            continue
        _report(args, path, record, previous, done, before)
    return 1 if failures else 0


def _failed(args: argparse.Namespace, source: str, reason: str) -> None:
    """Print one file's failure: ``longdoc: REASON`` on stderr (``reason`` names the file), and with
    ``--json`` its ``{"source", "change": "failed", "error"}`` row on stdout."""
    print(f"longdoc: {reason}", file=sys.stderr)
    if args.json:
        print(json.dumps({"source": source, "change": "failed", "error": reason}))


def _documents(raws: list[str]) -> list[Path | str]:
    """The documents to ingest for ``raws`` (the command line's paths), in order, each once.

    A sidecar (``<file>.metadata.json``, as ``ingest dir/*`` passes them) is not a document: it is
    read from beside its document, so it stands for that document (once, said on stderr, when
    the document is not among ``raws``), or, when the document is not there, for an error line
    (a ``str`` naming both; nothing is ingested for it). Endorsements come after the wordings
    (:func:`~longdoc.local.ingest_runner.endorsement_last`), so ``ingest set/*`` finds each
    endorsement's wording already in its collection.
    """
    from longdoc.ingest.metadata import METADATA_SUFFIX
    from longdoc.local.ingest_runner import endorsement_last

    given = {Path(r).resolve() for r in raws if not r.endswith(METADATA_SUFFIX)}
    out: list[Path | str] = []
    seen: set[Path] = set()
    for raw in raws:
        path = Path(raw)
        if raw.endswith(METADATA_SUFFIX) and not path.is_dir():
            document = path.with_name(path.name[:-len(METADATA_SUFFIX)])
            if document.resolve() in given:
                continue  # read with its document
            if not document.is_file():
                out.append(f"{path}: is a sidecar (metadata of {document.name}), and {document} is not there: "
                           f"ingest the document; its sidecar is read from beside it")
                continue
            print(f"longdoc: {path}: is a sidecar; ingesting its document {document} with it", file=sys.stderr)
            path = document
        if path.resolve() not in seen:
            seen.add(path.resolve())
            out.append(path)
    return sorted(out, key=lambda p: isinstance(p, Path) and endorsement_last(p))


def _watch_report(o: Outcome, as_json: bool) -> None:
    """Print one ``longdoc watch`` outcome: ``--json`` its dict, else a READY / unchanged / removed line
    on stdout, or the reason on stderr; then a READY file's warnings (:func:`_watch_overlaps`)."""
    if as_json:
        print(json.dumps(o.as_dict()), flush=True)
    elif o.status == "READY":
        state = f"{o.reused} embeddings reused" if o.change in (None, "ingested") else o.change
        print(f"{o.doc_id}  v{o.doc_version}  {o.pages} pages  {o.chunks} chunks  {state}  ({o.path})", flush=True)
    elif o.status == "DUPLICATE":
        print(f"unchanged, ignored: {o.path}", flush=True)
    elif o.status == "DELETED":
        print(f"{o.doc_id}  removed: its file is gone  ({o.path})", flush=True)
    else:
        where = "moved to failed/" if o.status == "FAILED" else "will retry"
        print(f"longdoc: {o.path}: {o.reason} ({where})", file=sys.stderr, flush=True)
    if o.status == "READY":
        _watch_overlaps(o)


def cmd_watch(args: argparse.Namespace) -> int:
    """Treat DIR as the bucket's ``incoming/``: ingest what is there and (without --once) what arrives.

    Prints one line per file (``--json``: the :class:`longdoc.local.watch.Outcome` dict).
    With ``--once`` the exit status is 1 when any file failed or must be retried.
    """
    import threading

    from longdoc.local.watch import Watcher

    root = Path(args.dir)
    if not root.is_dir():
        raise CliError(f"{root}: no such directory")

    def report(outcome: Outcome) -> None:
        _watch_report(outcome, args.json)

    def notify(line: str) -> None:
        print(f"longdoc: watch: {line}", file=sys.stderr, flush=True)

    watcher = Watcher(root, report, notify)
    if args.once:
        outcomes = watcher.run_once()
        return 1 if any(o.status in ("FAILED", "RETRY") for o in outcomes) else 0
    stop = threading.Event()
    try:
        watcher.serve(stop)
    except KeyboardInterrupt:
        stop.set()
    return 0


def cmd_chunks(args: argparse.Namespace) -> int:
    """Print a document version's chunks (all fields with --json)."""
    from longdoc import wiring
    from longdoc.core.documents import load_chunks, ready_document

    record = ready_document(wiring.state_store(), args.doc_id, args.version)
    what = f"{args.doc_id} version {args.version}" if args.version else args.doc_id
    if record is None:
        raise CliError(f"document {what} is not ingested")
    if record.status != "READY":
        raise CliError(f"document {what} is {_not_ready(record)}")
    chunks = load_chunks(wiring.blob_store(), record.doc_id, record.doc_version)
    for warning in record.warnings:
        print(f"longdoc: {record.source}: WARNING: {warning}", file=sys.stderr)
    if record.ocr_rotations:
        turned = ", ".join(f"page {p}: {t} degrees" for p, t in sorted(record.ocr_rotations.items()))
        print(f"longdoc: {record.source}: pages read turned upright by OCR ({turned})", file=sys.stderr)
    if args.json:
        print(json.dumps([c.model_dump(mode="json", exclude={"page_spans", "section_spans"}) | {"section_ids": c.section_ids}
                          for c in chunks], ensure_ascii=False, indent=1))
        return 0
    for c in chunks:
        pages = "-" if c.page_start is None else f"{c.page_start}-{c.page_end}"
        labels = [label for label in c.page_labels if label]
        printed = f"(p. {labels[0]}-{labels[-1]})" if labels and labels[0] != labels[-1] else (
            f"(p. {labels[0]})" if labels else "")
        sections = ",".join(c.section_ids[:3]) + ("…" if len(c.section_ids) > 3 else "")
        section = sections if sections.startswith("§") else "§" + (sections or "-")  # continental ids carry their own §
        flags = " [ocr_low_confidence]" if c.ocr_low_confidence else (" [ocr]" if c.ocr else "")
        print(f"{c.chunk_id}  p.{pages:<8} {printed:<14} {section:<25} {c.token_count:>5} tok  "
              f"{' > '.join(c.heading_path)[:50]}{flags}")
    return 0


INGEST_EPILOG = """\
examples:
  longdoc ingest contract.pdf policy.docx   # one line per file: doc_id, version, pages, chunks
  longdoc ingest policy-set/*               # endorsements are taken after the wordings they endorse

Ingesting the same bytes again is a no-op; changed bytes make a new version (older ones stay
readable with --version). Scanned pages are read by the local Tesseract (LONGDOC_OCR=off: none).
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add this module's subcommands to the ``longdoc`` parser."""
    p = sub.add_parser("ingest", help="parse, chunk, embed and index documents", epilog=INGEST_EPILOG)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="files to ingest (PDF, .txt, .md, .html, .docx); a sidecar PATH.metadata.json beside one "
                        "gives its metadata; the doc_id is derived from the file name (its stem, folded to a-z0-9-)")
    p.add_argument("--json", action="store_true",
                   help="one JSON line per file: doc_id, doc_version, source, pages, chunks, reused, skipped, "
                        "change, warnings (a failed file: source, change \"failed\", error)")
    p.set_defaults(func=cmd_ingest, progress=True)
    p = sub.add_parser("watch", help="ingest files dropped into a folder (the bucket's incoming/)")
    p.add_argument("dir", metavar="DIR",
                   help="folder watched as the bucket's incoming/; unusable files move to DIR/failed/ with a "
                        "NAME.reason.txt")
    p.add_argument("--once", action="store_true",
                   help="process what is there now, then exit (a file still being written is left for the next "
                        "run, exit status 1)")
    p.add_argument("--json", action="store_true", help="one JSON line per file taken, as `ingest --json`")
    p.set_defaults(func=cmd_watch, progress=True)
    p = sub.add_parser("chunks", help="list a document's chunks")
    p.add_argument("doc_id", metavar="DOC_ID", help="document id (the file name without its extension)")
    p.add_argument("--version", default=None, metavar="V", help="doc_version to read (default: the latest READY one)")
    p.add_argument("--json", action="store_true",
                   help="the chunks as a JSON list, each with its text, pages, page labels, section ids and heading path")
    p.set_defaults(func=cmd_chunks)
