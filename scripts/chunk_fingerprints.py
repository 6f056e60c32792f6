"""Write or check the chunk fingerprints of every corpus document (parse + chunk, no embedding).

A fingerprint is one line per chunk: ``chunk_id section_id char_start char_end content_hash[:16]``.
The stored file (``tests/data/chunk_fingerprints.txt``) is what ``tests/unit/ingest/test_chunk_fingerprints.py``
compares against, so a refactor that changes any chunk id, boundary or section is caught.
A deliberate chunking change regenerates it with ``--write`` and the diff is reviewed in the commit.

Usage: ``python scripts/chunk_fingerprints.py [--corpus ../shared/corpus] [--write]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STORED = REPO / "tests" / "data" / "chunk_fingerprints.txt"
SUFFIXES = {".pdf", ".txt", ".md", ".html", ".htm", ".docx"}


def corpus_files(corpus: Path) -> list[Path]:
    """Every parseable file under ``corpus`` (recursively, sorted), ``bad/`` included."""
    return sorted(p for p in corpus.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES
                  and p.name != "MANIFEST.md")


def fingerprint(corpus: Path) -> list[str]:
    """Lines ``<relative path>\\t<chunk fingerprint>`` (or ``\\tERROR <reason>``) for the corpus."""
    from longdoc.core.errors import DocumentError
    from longdoc.ingest.pipeline import chunk_bytes

    lines: list[str] = []
    for path in corpus_files(corpus):
        rel = path.relative_to(corpus).as_posix()
        try:
            chunks = chunk_bytes(path.name, path.read_bytes())
        except DocumentError as exc:
            lines.append(f"{rel}\tERROR {exc.reason}")
            continue
        for c in chunks:
            lines.append(f"{rel}\t{c.chunk_id} {c.section_id} {c.char_start} {c.char_end} {c.content_hash[:16]}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Write (``--write``) or compare the fingerprints; exit 1 and print the first differences."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    lines = fingerprint(args.corpus)
    if args.write:
        STORED.parent.mkdir(parents=True, exist_ok=True)
        STORED.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {len(lines)} lines to {STORED}")
        return 0
    stored = STORED.read_text(encoding="utf-8").split("\n")[:-1]
    if stored == lines:
        print(f"{len(lines)} fingerprints identical")
        return 0
    import difflib
    sys.stdout.writelines(list(difflib.unified_diff(stored, lines, "stored", "now", lineterm="\n", n=0))[:80])
    return 1


if __name__ == "__main__":
    sys.exit(main())
