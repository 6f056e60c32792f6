"""load_gold: the gold JSON Lines reader."""

from __future__ import annotations

import json
from pathlib import Path

from longdoc.eval.gold import load_gold


def test_gold_snippets_with_unicode_line_separators_stay_one_case(tmp_path: Path) -> None:
    # Given a gold file whose snippet holds U+2028, U+2029 and U+0085 (json.dumps with
    # ensure_ascii=False leaves them raw, and str.splitlines() would cut the line there)
    snippet = "The Supplier shall deliver\u2028goods\u2029on\u0085time."
    rows = [{"case_id": "c1", "doc": "a.txt", "clause_type": "Delivery", "expected": "found", "snippets": [snippet]},
            {"case_id": "c2", "doc": "a.txt", "clause_type": "Notices", "expected": "not_found", "pages": [3]}]
    path = tmp_path / "gold.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n\n", encoding="utf-8")
    # When it is loaded
    cases = load_gold(path)
    # Then there are two cases and the snippet is byte-identical
    assert [c.case_id for c in cases] == ["c1", "c2"]
    assert cases[0].snippets == [snippet]
    assert cases[1].page_numbers == [3]
