"""Document ids for every file name: Latin names keep their slug, other scripts get a name hash."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from longdoc.ingest.ids import doc_id_for_key


def _old_slug(key: str) -> str:
    """The rule before names in other scripts got a hash (kept to pin Latin ids)."""
    name = key.removeprefix("incoming/")
    stem = re.sub(r"\.[A-Za-z0-9]{1,8}$", "", name)
    ascii_ = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_.lower()).strip("-")[:96]


def test_a_name_without_latin_letters_gets_an_id() -> None:
    # Given keys whose names hold no Latin letter at all, on AWS and locally
    # When ids are derived, Then each is doc- and 8 hex digits of the name's SHA-256
    assert doc_id_for_key("incoming/契約書.pdf") == "doc-9fb9a154"
    assert doc_id_for_key("合同.txt") == "doc-06c89180"


def test_two_names_that_fold_to_the_same_digits_do_not_collide() -> None:
    # Given two contracts whose names differ only in Japanese words
    lease, sale = doc_id_for_key("incoming/賃貸契約 2024.pdf"), doc_id_for_key("incoming/売買契約 2024.pdf")
    # Then their ids keep the Latin part and differ by the name hash
    assert (lease, sale) == ("2024-cf3df3ae", "2024-6d5395bd")


def test_nfd_and_nfc_spellings_share_an_id_and_extensions_are_versions() -> None:
    nfc = "incoming/가나 계약.pdf"
    assert doc_id_for_key(unicodedata.normalize("NFD", nfc)) == doc_id_for_key(nfc)
    assert doc_id_for_key("incoming/契約書.docx") == doc_id_for_key("incoming/契約書.pdf")


def test_latin_names_keep_todays_ids(corpus_dir: Path) -> None:
    # Given every corpus file name and accented Latin names
    names = [p.name for p in corpus_dir.rglob("*") if p.is_file()]
    names += ["Master Services Agreement (v2) – Ünïcode.pdf", "ＦＵＬＬＷＩＤＴＨ ２.pdf", "Zürich Vertrag.txt"]
    # Then the id is exactly the ASCII slug used before
    assert [doc_id_for_key("incoming/" + n) for n in names] == [_old_slug("incoming/" + n) for n in names]
    assert doc_id_for_key("incoming/Master Services Agreement (v2) – Ünïcode.pdf") == "master-services-agreement-v2-unicode"


def test_every_id_is_short_ascii_and_never_empty() -> None:
    for key in ("incoming/.pdf", "incoming/" + "契" * 300 + ".pdf", "incoming/" + "a-" * 100 + "Ж.pdf", "incoming/ß"):
        doc_id = doc_id_for_key(key)
        assert doc_id and doc_id.isascii() and len(doc_id) <= 96 and not doc_id.startswith("-")
