"""PDFium is not thread-safe: parses running in several threads of one process are serialised.

Without :data:`~longdoc.ingest.parse.pdf.PDFIUM_LOCK` this crashed CI's interpreter with a
segmentation fault (two workers of ``test_ingest_claims`` parsing one PDF at the same moment).
"""

from __future__ import annotations

import threading
from pathlib import Path

from longdoc.ingest.parse import pdf as pdf_module
from longdoc.ingest.parse.pdf import read_pdf


def test_six_threads_parsing_pdfs_at_once_read_what_one_thread_reads(corpus_dir: Path) -> None:
    # Given two real PDFs and what a single thread reads from each
    names = ["scotus-transcript-p1.pdf", "dmca-1998-copyright-office-summary.pdf"]
    data = {n: (corpus_dir / n).read_bytes() for n in names}
    expected = {n: read_pdf(n, data[n], 2000)[0] for n in names}
    barrier = threading.Barrier(6)
    texts: list[tuple[str, str]] = []
    errors: list[BaseException] = []

    def work(name: str) -> None:
        barrier.wait()
        try:
            for _ in range(2):
                texts.append((name, read_pdf(name, data[name], 2000)[0]))
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    # When six threads parse them at the same moment
    threads = [threading.Thread(target=work, args=(names[i % 2],)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Then every parse finished with the single-thread text
    assert errors == []
    assert len(texts) == 12
    assert all(text == expected[name] for name, text in texts)


def test_the_lock_is_held_while_pdfium_reads(monkeypatch, corpus_dir: Path) -> None:
    # Given a spy on the page reader that records whether the process-wide lock is held
    held: list[bool] = []
    real = pdf_module._raw_page_text

    def spy(*args, **kwargs):
        held.append(pdf_module.PDFIUM_LOCK._is_owned())  # type: ignore[attr-defined]
        return real(*args, **kwargs)

    monkeypatch.setattr(pdf_module, "_raw_page_text", spy)
    # When a PDF is read
    read_pdf("scotus.pdf", (corpus_dir / "scotus-transcript-p1.pdf").read_bytes(), 2000)
    # Then every page was read under the lock
    assert held and all(held)
