"""Document ids for every file name: a slug that spells the name is the id, any other name adds a name hash."""

from __future__ import annotations

import itertools
import re
import unicodedata
from pathlib import Path

import pytest

from longdoc.adapters.state import SqliteStateStore
from longdoc.core.models import DocumentRecord
from longdoc.ingest.ids import doc_id_for_key, earlier_doc_ids, resolve_doc_id


def _old_slug(key: str) -> str:
    """The rule before issue 13 (kept to pin the ids that did not change)."""
    name = key.removeprefix("incoming/")
    stem = re.sub(r"\.[A-Za-z0-9]{1,8}$", "", name)
    ascii_ = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_.lower()).strip("-")[:96]


def test_a_name_without_latin_letters_gets_an_id() -> None:
    # Given keys whose names hold no Latin letter at all, on AWS and locally
    # When ids are derived, Then each is doc-- and 8 hex digits of the name's SHA-256
    assert doc_id_for_key("incoming/契約書.pdf") == "doc--9fb9a154"
    assert doc_id_for_key("合同.txt") == "doc--06c89180"


def test_two_names_that_fold_to_the_same_digits_do_not_collide() -> None:
    # Given two contracts whose names differ only in Japanese words
    lease, sale = doc_id_for_key("incoming/賃貸契約 2024.pdf"), doc_id_for_key("incoming/売買契約 2024.pdf")
    # Then their ids keep the Latin part and differ by the name hash
    assert (lease, sale) == ("2024--cf3df3ae", "2024--6d5395bd")


def test_names_differing_in_case_separators_or_accents_never_share_an_id() -> None:
    # Given names that the slug folds together: case, space/underscore/hyphen/dot/slash,
    # accents, full-width forms, and two long names alike in their first 96 characters
    groups = [["Contract", "contract", "CONTRACT", "Contract "],
              ["my contract", "my_contract", "my-contract", "my--contract", "my.contract", "my/contract"],
              ["Zürich Vertrag", "Zurich Vertrag", "zurich-vertrag"],
              ["ＦＵＬＬ ２", "FULL 2", "full-2"],
              ["a" * 96, "a" * 97, "a" * 120, "a" * 96 + "-b"]]
    for names in groups:
        # When ids are derived for each (as object keys)
        ids = [doc_id_for_key(f"incoming/{n}.txt") for n in names]
        # Then every name has its own id, and all of them start with the same readable slug
        assert len(set(ids)) == len(names), dict(zip(names, ids, strict=True))
        assert len({i[:4] for i in ids}) == 1
    # And the pairs of the bug report are apart, each keeping the readable slug
    assert doc_id_for_key("Contract.txt") == "contract--a6f5b0e5" != doc_id_for_key("contract.txt") == "contract"
    assert (doc_id_for_key("my contract.txt"), doc_id_for_key("my_contract.txt")) == (
        "my-contract--17712146", "my-contract--bd24f241")


def test_no_two_names_of_a_large_mixed_set_share_an_id() -> None:
    # Given every name of up to three characters from letters of both cases, digits,
    # separators and an accented letter (22,000 names; many fold to one slug)
    alphabet = ["a", "A", "b", "1", " ", "_", "-", ".", "é"]
    names = {"".join(p) for n in range(1, 4) for p in itertools.product(alphabet, repeat=n)}
    # When ids are derived / Then they are exactly as many as the names
    assert len({doc_id_for_key(f"incoming/{n}.pdf") for n in names}) == len(names)


def test_nfd_and_nfc_spellings_share_an_id_and_extensions_are_versions() -> None:
    nfc = "incoming/가나 계약.pdf"
    assert doc_id_for_key(unicodedata.normalize("NFD", nfc)) == doc_id_for_key(nfc)
    assert doc_id_for_key("incoming/契約書.docx") == doc_id_for_key("incoming/契約書.pdf")
    assert doc_id_for_key("incoming/Lease 2024.docx") == doc_id_for_key("incoming/Lease 2024.pdf")


def test_lowercase_hyphenated_names_keep_todays_ids(corpus_dir: Path) -> None:
    # Given every corpus file name
    names = [p.name for p in corpus_dir.rglob("*") if p.is_file()]
    plain = [n for n in names if re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*(\.[a-z0-9]+)?", n)]
    assert len(plain) >= 50  # the CUAD set, the policies, the GDPR texts
    # Then a name its slug spells keeps exactly the id it had; the others now carry a name hash
    assert [doc_id_for_key("incoming/" + n) for n in plain] == [_old_slug("incoming/" + n) for n in plain]
    assert doc_id_for_key("incoming/Apache-2.0.txt") == "apache-2-0--2af71558"
    assert doc_id_for_key("incoming/Master Services Agreement (v2) – Ünïcode.pdf") == (
        "master-services-agreement-v2-unicode--ff951a14")


def test_every_id_is_short_ascii_and_never_empty() -> None:
    for key in ("incoming/.pdf", "incoming/" + "契" * 300 + ".pdf", "incoming/" + "a-" * 100 + "Ж.pdf", "incoming/ß"):
        doc_id = doc_id_for_key(key)
        assert doc_id and doc_id.isascii() and len(doc_id) <= 96 and not doc_id.startswith("-")


def test_earlier_rules_are_listed_newest_first() -> None:
    assert earlier_doc_ids("incoming/Contract.txt") == ["contract"]
    assert earlier_doc_ids("incoming/賃貸契約 2024.pdf") == ["2024-cf3df3ae", "2024"]
    assert earlier_doc_ids("incoming/契約書.pdf") == ["doc-9fb9a154"]


def _registered(state: SqliteStateStore, doc_id: str, key: str | None, source: str) -> None:
    state.put_document(DocumentRecord(doc_id=doc_id, doc_version="0123456789abcdef", source=source,
                                      status="READY", source_key=key, updated_at="2025-01-01T00:00:00+00:00"))


def test_a_document_registered_under_an_earlier_id_keeps_it(tmp_path: Path) -> None:
    # Given a registry from before this rule: Contract.txt as "contract", 賃貸契約 2024.pdf as
    # "2024-cf3df3ae", and a record old enough to hold only its file name (no source_key)
    state = SqliteStateStore(tmp_path / "state.sqlite3")
    _registered(state, "contract", "incoming/Contract.txt", "Contract.txt")
    _registered(state, "2024-cf3df3ae", "incoming/賃貸契約 2024.pdf", "賃貸契約 2024.pdf")
    _registered(state, "my-lease", None, "My Lease.pdf")
    # When the same names (or another extension of them) arrive again
    # Then they resolve to the ids they are registered under
    assert resolve_doc_id("incoming/Contract.txt", state) == "contract"
    assert resolve_doc_id("incoming/Contract.pdf", state) == "contract"
    assert resolve_doc_id("incoming/賃貸契約 2024.pdf", state) == "2024-cf3df3ae"
    assert resolve_doc_id("incoming/My Lease.pdf", state) == "my-lease"
    # And other names that the old rule folded onto those ids get their own
    assert resolve_doc_id("incoming/CONTRACT.txt", state) == doc_id_for_key("CONTRACT.txt") != "contract"
    assert resolve_doc_id("incoming/contract.txt", state) == "contract"  # its own id under both rules
    assert resolve_doc_id("incoming/売買契約 2024.pdf", state) == "2024--6d5395bd"
    assert resolve_doc_id("incoming/my_lease.pdf", state) == "my-lease--" + doc_id_for_key("my_lease")[-8:]


@pytest.mark.parametrize("key", ["incoming/Contract.txt", "incoming/合同.txt"])
def test_todays_id_wins_once_it_holds_a_document(tmp_path: Path, key: str) -> None:
    # Given a name registered under both its earlier id and today's id
    state = SqliteStateStore(tmp_path / "state.sqlite3")
    for doc_id in (*earlier_doc_ids(key), doc_id_for_key(key)):
        _registered(state, doc_id, key, key.rsplit("/", 1)[-1])
    # Then today's id is used
    assert resolve_doc_id(key, state) == doc_id_for_key(key)
