"""Chunking quality and speed: longdoc's chunker against the usual splitters (run on demand).

    make bench-chunking            # installs the `bench` extra, then runs this
    python benchmarks/chunking.py [--corpus ../shared/corpus] [--target 1000] [--no-long]
    python benchmarks/chunking.py --by-type        # our chunker alone, per document type (issue 27)
    python benchmarks/chunking.py --by-type --held-out /tmp/i1040-2018.pdf   # plus a PDF not stored here
    LONGDOC_BENCH_CODE=/other/checkout/layers/longdoc python benchmarks/chunking.py --by-type
                                                   # the same measure on another checkout's code

Every document in the corpus (top level and ``cuad/``; ``bad/`` skipped) is parsed once
with :func:`parse_document` and split by each chunker at the same target: ours at
``target_tokens`` (estimated tokens, 4 characters each) with max = 2 x target; the others
at ``4 * target`` characters with a 15 % overlap where they take one. Ground truth for
sections is OUR section detection (the sections :mod:`longdoc.ingest.chunk` finds); see
``docs/benchmarks.md`` for the metric definitions. Ratios are against LangChain's
``RecursiveCharacterTextSplitter`` measured in the same run. Finally a >= 1,000-page PDF
is built in /tmp by concatenating corpus PDFs (pypdfium2 ``import_pages``) and parsed +
chunked once, on one core.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.environ.get("LONGDOC_BENCH_CODE") or str(ROOT / "layers" / "longdoc"))
sys.path.insert(1, str(ROOT))  # tests/unit/columns_builder.py makes the multi-column documents

from longdoc.ingest import chunk as ours  # noqa: E402
from longdoc.ingest.chunk.split import heading_only  # noqa: E402
from longdoc.ingest.chunk.state import ChunkingState, Section, typical_line_length  # noqa: E402
from longdoc.ingest.parse import parse_document  # noqa: E402
from longdoc.core.tokens import CHARS_PER_TOKEN, estimate_tokens  # noqa: E402
from longdoc.ingest.models import ParsedDocument  # noqa: E402

TERMINATORS = tuple('.;:!?)]"”')
LIST_ITEM = re.compile(r"(?:\([a-zA-Z0-9]{1,4}\)|[•●▪◦·\-–]\s|\d{1,3}\.\s|[a-z]\)\s)")
Span = tuple[int, int]


def documents(corpus: Path) -> list[Path]:
    """Every corpus document (top level and cuad/), bad/ and manifests skipped."""
    keep = {".pdf", ".txt", ".md", ".html", ".docx"}
    files = sorted(p for p in corpus.iterdir() if p.is_file() and p.suffix in keep)
    files += sorted(p for p in (corpus / "cuad").iterdir() if p.suffix == ".pdf")
    return files


def locate(text: str, pieces: list[str]) -> list[Span]:
    """Offsets of chunk strings in ``text``, searched forward (whitespace-trimmed)."""
    spans: list[Span] = []
    cursor = 0
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        at = text.find(piece, max(0, cursor - len(piece)))
        if at < 0:
            at = text.find(piece)
        if at < 0:
            continue
        spans.append((at, at + len(piece)))
        cursor = at + len(piece)
    return spans


def trim(text: str, span: Span) -> Span:
    a, b = span
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def ground_truth(doc: ParsedDocument) -> list[Section]:
    """Our detected sections over the document text (the reference for every chunker)."""
    marks = {h.char_start: h.level for h in doc.headings}
    state = ChunkingState(doc, typical_line_length(doc.text), markdown=doc.media_type == "text/markdown", marks=marks)
    for section_pass in ours.SECTION_PASSES:
        section_pass(state)
    out = []
    for s in state.sections:
        a, b = trim(doc.text, (s.start, s.end))
        if a < b:
            out.append(Section(s.section_id, s.heading_path, a, b))
    return out


def ends_mid_sentence(text: str, end: int, section_starts: set[int]) -> bool:
    """The end rule of docs/benchmarks.md: a chunk end must be a joint."""
    if end >= len(text.rstrip()):
        return False
    if text[:end].rstrip().endswith(TERMINATORS):
        return False
    after = text[end:]
    nxt = end + len(after) - len(after.lstrip())
    if "\n" not in text[end:nxt + 1]:
        return True
    return not (nxt in section_starts or "\n\n" in text[end : nxt + 1] or LIST_ITEM.match(text, nxt))


def measure(doc: ParsedDocument, spans: list[Span], sections: list[Section], target: int,
            suffixed: set[str] | None = None) -> dict[str, float]:
    """Per-document counts for one chunker (see docs/benchmarks.md)."""
    text = doc.text
    starts = {s.start for s in sections}
    mid = mixed = 0
    pieces_per_section: dict[int, int] = {}
    for a, b in spans:
        a, b = trim(text, (a, b))
        mid += ends_mid_sentence(text, b, starts)
        touched = [i for i, s in enumerate(sections) if s.start < b and a < s.end and text[max(a, s.start):min(b, s.end)].strip()
                   and not heading_only(text, s, sections[i + 1] if i + 1 < len(sections) else None)]
        partial = [i for i in touched if not (a <= sections[i].start and sections[i].end <= b)]
        if len(touched) >= 2 and partial:
            mixed += 1
        for i in touched:
            pieces_per_section[i] = pieces_per_section.get(i, 0) + 1
    numbered = [i for i, s in enumerate(sections) if s.section_id]
    if os.environ.get("BENCH_DEBUG") and suffixed is not None and mid:
        for a, b in spans:
            a, b = trim(text, (a, b))
            if ends_mid_sentence(text, b, starts):
                print("MID", doc.source, repr(text[b - 60 : b + 40]), file=sys.stderr)
    split_unsuffixed = sum(
        1 for i in numbered
        if pieces_per_section.get(i, 0) > 1 and not (suffixed and sections[i].section_id in suffixed)
    )
    sizes = [estimate_tokens(text[a:b]) for a, b in spans]
    return {"chunks": len(spans), "mid": mid, "mixed": mixed, "numbered": len(numbered),
            "split_unsuffixed": split_unsuffixed, "sizes": sizes}


def multi_column_pages(path: Path) -> set[int]:
    """1-based pages of a PDF on which :func:`find_gutters` finds columns (empty for other formats)."""
    if path.suffix.lower() != ".pdf":
        return set()
    import pypdfium2 as pdfium

    from longdoc.ingest.parse.columns import find_gutters, text_runs

    pdf = pdfium.PdfDocument(path.read_bytes())
    try:
        return {i + 1 for i in range(len(pdf)) if find_gutters(text_runs(pdf[i].get_textpage()))}
    finally:
        pdf.close()


def multi_column_mid(doc: ParsedDocument, spans: list[Span], sections: list[Section],
                     pages: set[int]) -> tuple[int, int]:
    """``(chunks ending on a multi-column page, of them ending mid-sentence)``."""
    starts = {s.start for s in sections}
    ends = [trim(doc.text, span)[1] for span in spans]
    on = [b for b in ends if doc.page_at(max(0, b - 1)) in pages]
    return len(on), sum(ends_mid_sentence(doc.text, b, starts) for b in on)


def pdfium_order_mid(docs: list, corpus: Path, target: int) -> tuple[int, int]:
    """Our chunker's multi-column figure with the reading order switched off (PDFium's own text order)."""
    from unittest import mock

    import longdoc.ingest.parse.pdf as pdf_module

    total = mid = 0
    with mock.patch.object(pdf_module, "reading_order", lambda textpage: textpage.get_text_range()):
        for doc, _, _, multi in docs:
            if not multi:
                continue
            plain = parse_document(doc.source, (corpus / doc.source).read_bytes())
            chunks = ours.chunk_document(plain, "bench", target_tokens=target, max_tokens=2 * target)
            n, m = multi_column_mid(plain, [(c.char_start, c.char_end) for c in chunks], ground_truth(plain), multi)
            total, mid = total + n, mid + m
    return total, mid


def splitters(target: int) -> dict[str, Callable[[str], list[str]]]:
    """The competitors, each configured for ``4 * target`` characters (15 % overlap if supported)."""
    chars = target * CHARS_PER_TOKEN
    out: dict[str, Callable[[str], list[str]]] = {}
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    lc = RecursiveCharacterTextSplitter(chunk_size=chars, chunk_overlap=int(0.15 * chars))
    out["langchain-recursive"] = lc.split_text
    from chonkie import RecursiveChunker

    ch = RecursiveChunker(tokenizer="character", chunk_size=chars)
    out["chonkie-recursive"] = lambda t: [c.text for c in ch.chunk(t)]
    import semchunk

    out["semchunk"] = lambda t: semchunk.chunk(t, chunk_size=chars, token_counter=len)
    from semantic_text_splitter import TextSplitter

    sts = TextSplitter(chars)
    out["semantic-text-splitter"] = sts.chunks
    return out


def long_pdf(corpus: Path, pages: int = 1000) -> Path:
    """Concatenate corpus PDFs (pypdfium2 import_pages) into /tmp until >= ``pages`` pages."""
    import pypdfium2 as pdfium

    out = pdfium.PdfDocument.new()
    sources = [p for p in documents(corpus) if p.suffix == ".pdf"]
    while len(out) < pages:
        for path in sources:
            src = pdfium.PdfDocument(path.read_bytes())
            out.import_pages(src)
            src.close()
            if len(out) >= pages:
                break
    target = Path(tempfile.gettempdir()) / f"longdoc-bench-{len(out)}-pages.pdf"
    buffer = io.BytesIO()
    out.save(buffer)
    out.close()
    target.write_bytes(buffer.getvalue())
    return target


DASH_FOLIO = re.compile(r"(?<!\S)-\s?([1-9]\d{0,3})\s?-(?!\S)")
PAGE_FOLIO = re.compile(r"^[ \t]*Page\s+\d{1,4}(?:\s+of\s+\d{1,4})?(?!\S)|(?<!\S)Page\s+\d{1,4}(?:\s+of\s+\d{1,4})?[ \t]*$",
                        re.MULTILINE)
BARE_NUMBER = re.compile(r"^[ \t]*(\d{1,4})[ \t]*$", re.MULTILINE)
REAL = ROOT / "tests" / "data" / "filings"


def folio_lines(doc: ParsedDocument, a: int, b: int) -> list[str]:
    """The page numbers left in ``doc.text[a:b]``: a folio ``-2-`` / ``- 2 -`` anywhere (on its own line or
    welded into one; ``-0-`` is how the IRS writes zero, never a page), ``Page 3`` / ``Page 3 of 9`` opening
    or closing a line (``September 2, 1998 Page 3``), and a line holding only a number that is its page's physical number or printed label (a bare number
    in a table is not a folio)."""
    text = doc.text
    found = [m.group(0).strip() for m in DASH_FOLIO.finditer(text, a, b)]
    found += [m.group(0).strip() for m in PAGE_FOLIO.finditer(text, a, b)]
    for m in BARE_NUMBER.finditer(text, a, b):
        span = next((p for p in doc.pages if p.char_start <= m.start() < p.char_end), None)
        if span is not None and m.group(1) in {str(span.page), span.label}:
            found.append(m.group(1))
    return found


def doc_type(name: str) -> str:
    """The document type a benchmark document stands for (its corpus name, or a made, real or held-out
    one's own row name)."""
    rules = (("made:", None), ("real:", None), ("held-out:", None), ("cuad/", "contract"),
             ("federal-register", "filing, 3 columns"), ("canadian", "policy wording, 2 columns"), ("policy", "policy wording"), ("gdpr", "regulation"),
             ("scotus", "transcript"), ("dmca", "summary"))
    for prefix, kind in rules:
        if prefix in name:
            return kind or name.split(":")[1].split("/")[0]
    return "licence / text"


def made_documents() -> list[tuple[str, bytes]]:
    """Multi-column documents made here (issue 27), with :mod:`tests.unit.columns_builder`: a 12-page
    3-column filing with folios between the columns, and 4 small 2-column pages drawn row by row."""
    from tests.unit.columns_builder import clause, column_lines, columns_pdf

    number, filing = 1, []
    for _ in range(12):
        page = []
        for _ in range(3):
            page.append(column_lines([clause(number), clause(number + 1)], 34))
            number += 2
        filing.append(page)
    small = []
    for _ in range(4):
        small.append([column_lines([clause(number, 12)], 40), column_lines([clause(number + 1, 12)], 40)])
        number += 2
    return [("made:filing, 3 columns, folios between columns/filing.pdf", columns_pdf(filing, folios=True)),
            ("made:small pages, 2 columns/small.pdf", columns_pdf(small, size=9.0))]


def real_documents() -> list[tuple[str, bytes]]:
    """The real filings kept in ``tests/data/filings`` (public domain; see the README there)."""
    return [(f"real:filing, 3 columns, IRS instructions (real, {len(_pages(p))} pages)/{p.name}", p.read_bytes())
            for p in sorted(REAL.glob("*.pdf"))]


def _pages(path: Path) -> list[int]:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path.read_bytes())
    try:
        return list(range(len(pdf)))
    finally:
        pdf.close()


def by_type(corpus: Path, target: int, held_out: list[Path]) -> int:
    """Print our chunker's mid-sentence chunk ends and furniture leaks (chunks holding a page number,
    :func:`folio_lines`) per document type, on the corpus, the made documents, the real filings of
    ``tests/data/filings`` and any ``held_out`` PDFs (one row each)."""
    import longdoc

    rows: dict[str, list[int]] = {}
    inputs = [(p.relative_to(corpus).as_posix(), p.read_bytes()) for p in documents(corpus)] + made_documents()
    inputs += real_documents()
    inputs += [(f"held-out:{p.name} (not stored, {len(_pages(p))} pages)/{p.name}", p.read_bytes()) for p in held_out]
    for name, data in inputs:
        outside = name.startswith(("made:", "real:", "held-out:"))
        doc = parse_document(name.split("/")[-1] if outside else name, data)
        sections = ground_truth(doc)
        starts = {s.start for s in sections}
        chunks = ours.chunk_document(doc, "bench", target_tokens=target, max_tokens=2 * target)
        spans = [trim(doc.text, (c.char_start, c.char_end)) for c in chunks]
        row = rows.setdefault(doc_type(name), [0, 0, 0, 0])
        row[0] += 1
        row[1] += len(spans)
        row[2] += sum(ends_mid_sentence(doc.text, b, starts) for _, b in spans)
        row[3] += sum(1 for a, b in spans if folio_lines(doc, a, b))
    print(f"code: {Path(longdoc.__file__).parent}; target {target} tokens")
    print("| document type | documents | chunks | mid-sentence ends | chunks with a page number |")
    print("|---|---:|---:|---:|---:|")
    for kind, (n, total, mid, folio) in rows.items():
        print(f"| {kind} | {n} | {total} | {mid} ({mid / total:.1%}) | {folio} ({folio / total:.1%}) |")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / ".." / "shared" / "corpus")
    parser.add_argument("--target", type=int, default=1000)
    parser.add_argument("--no-long", action="store_true", help="skip the 1,000-page PDF")
    parser.add_argument("--by-type", action="store_true",
                        help="only our chunker, per document type: mid-sentence ends and furniture leaks")
    parser.add_argument("--held-out", type=Path, action="append", default=[],
                        help="with --by-type: a PDF not in the repository to measure as its own row (repeatable)")
    args = parser.parse_args()
    if args.by_type:
        return by_type(args.corpus, args.target, args.held_out)
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    except (AttributeError, OSError):
        pass
    target = args.target
    docs = []
    for path in documents(args.corpus):
        t0 = time.perf_counter()
        doc = parse_document(path.relative_to(args.corpus).as_posix(), path.read_bytes())
        docs.append((doc, time.perf_counter() - t0, max(1, doc.page_count), multi_column_pages(path)))
    names = ["longdoc", *splitters(target)]
    comp = splitters(target)
    totals = {n: {"chunks": 0, "mid": 0, "mixed": 0, "numbered": 0, "split_unsuffixed": 0, "sizes": [],
                  "seconds": 0.0, "pages": 0, "mcol": 0, "mcol_mid": 0} for n in names}
    overlaps: list[int] = []  # our continuations' overlap, estimated tokens (0 = overlap_missing)
    for doc, parse_s, pages, multi in docs:
        sections = ground_truth(doc)
        for name in names:
            t0 = time.perf_counter()
            if name == "longdoc":
                chunks = ours.chunk_document(doc, "bench", target_tokens=target, max_tokens=2 * target)
                spans = [(c.char_start, c.char_end) for c in chunks]
                suffixed = {sid.split("#")[0] for c in chunks for sid in c.section_ids if "#" in sid}
                overlaps += [estimate_tokens(c.text[: c.overlap_chars]) for c in chunks
                             if c.overlap_chars or c.overlap_missing]
            else:
                spans = locate(doc.text, comp[name](doc.text))
                suffixed = None
            elapsed = time.perf_counter() - t0 + parse_s
            m = measure(doc, spans, sections, target, suffixed)
            tot = totals[name]
            for key in ("chunks", "mid", "mixed", "numbered", "split_unsuffixed"):
                tot[key] += m[key]
            tot["sizes"].extend(m["sizes"])
            tot["seconds"] += elapsed
            tot["pages"] += pages
            n_multi, mid_multi = multi_column_mid(doc, spans, sections, multi)
            tot["mcol"] += n_multi
            tot["mcol_mid"] += mid_multi
    base = totals["langchain-recursive"]

    def share(t: dict, key: str, of: str = "chunks") -> float:
        return t[key] / t[of] if t[of] else 0.0

    def ratio(value: float, base_value: float) -> str:
        return "-" if base_value == 0 else f"{value / base_value:.2f}x"

    print(f"{len(docs)} documents, {sum(p for _, _, p, _ in docs)} pages "
          f"({sum(len(m) for *_, m in docs)} multi-column); target {target} tokens "
          f"(= {target * CHARS_PER_TOKEN} chars); baseline langchain-recursive")
    header = ("chunker", "chunks", "mid-sentence", "mixed-section", "split-no-suffix", "median tok",
              "p90 tok", "in [0.5T,2T]", "pages/s", "mid-sentence, multi-column pages")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name in names:
        t = totals[name]
        sizes = sorted(t["sizes"])
        med = statistics.median(sizes)
        p90 = sizes[int(0.9 * (len(sizes) - 1))]
        inside = sum(1 for s in sizes if 0.5 * target <= s <= 2 * target) / len(sizes)
        base_sizes = sorted(base["sizes"])
        base_inside = sum(1 for s in base_sizes if 0.5 * target <= s <= 2 * target) / len(base_sizes)
        pps = t["pages"] / t["seconds"]
        base_pps = base["pages"] / base["seconds"]
        cells = [
            name, str(t["chunks"]),
            f"{share(t, 'mid'):.1%} ({ratio(share(t, 'mid'), share(base, 'mid'))})",
            f"{share(t, 'mixed'):.1%} ({ratio(share(t, 'mixed'), share(base, 'mixed'))})",
            f"{share(t, 'split_unsuffixed', 'numbered'):.1%} "
            f"({ratio(share(t, 'split_unsuffixed', 'numbered'), share(base, 'split_unsuffixed', 'numbered'))})",
            f"{med:.0f} ({ratio(med, statistics.median(base_sizes))})",
            f"{p90} ({ratio(p90, base_sizes[int(0.9 * (len(base_sizes) - 1))])})",
            f"{inside:.0%} ({ratio(inside, base_inside)})",
            f"{pps:.0f} ({ratio(pps, base_pps)})",
            f"{share(t, 'mcol_mid', 'mcol'):.1%} ({t['mcol_mid']}/{t['mcol']})",
        ]
        print("| " + " | ".join(cells) + " |")
    n_plain, mid_plain = pdfium_order_mid(docs, args.corpus, target)
    t = totals["longdoc"]
    print(f"\nmulti-column pages, longdoc: {t['mcol_mid']}/{t['mcol']} chunk ends mid-sentence in reading order; "
          f"{mid_plain}/{n_plain} with PDFium's text order (columns off)")
    shares = sorted(o / target for o in overlaps if o)
    if shares:
        print(f"\nlongdoc overlap: {len(overlaps)} continuations, {len(shares)} with whole-sentence overlap "
              f"(median {statistics.median(shares):.1%}, max {shares[-1]:.1%} of target; "
              f"{sum(1 for x in shares if x >= 0.10)} in 10-20 %), "
              f"{len(overlaps) - len(shares)} overlap_missing")
    if not args.no_long:
        path = long_pdf(args.corpus)
        data = path.read_bytes()
        t0 = time.perf_counter()
        doc = parse_document(path.name, data)
        t1 = time.perf_counter()
        chunks = ours.chunk_document(doc, "long", target_tokens=target, max_tokens=2 * target)
        t2 = time.perf_counter()
        print(f"\nlong PDF {path} ({doc.page_count} pages, {len(data) / 1e6:.1f} MB): parse {t1 - t0:.1f} s + "
              f"chunk {t2 - t1:.1f} s = {t2 - t0:.1f} s on one core ({len(chunks)} chunks; target < 60 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
