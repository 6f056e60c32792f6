"""Gold cases (format: ``/work/shared/gold/README.md``), one JSON object per line."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class GoldCase(BaseModel):
    """One labelled case: a clause type (or question) on one corpus document.

    ``doc`` and ``doc_text`` are paths under the corpus folder; ``expected`` is ``found``
    or ``not_found``; ``snippets`` are verbatim gold text (empty when not_found);
    ``section_ids`` / ``page_numbers`` / ``exact_values`` come with hand cases.
    """

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    case_id: str
    doc: str
    doc_text: str | None = None
    doc_type: str | None = None
    clause_type: str
    question: str = ""
    expected: str
    snippets: list[str] = Field(default_factory=list)
    answer: str | None = None
    section_ids: list[str] = Field(default_factory=list)
    page_numbers: list[int] = Field(default_factory=list)
    exact_values: list[str] = Field(default_factory=list)


def load_gold(path: Path) -> list[GoldCase]:
    """Read a gold JSONL file. ``pages`` is a count on CUAD cases and a page list on hand
    cases: a list goes to ``page_numbers``. Raises ``ValueError`` naming the line on bad input.
    """
    import json

    cases = []
    # "\n" only: str.splitlines() also splits at U+2028/U+2029/U+0085, which JSON leaves raw
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if isinstance(raw.get("pages"), list):
                raw["page_numbers"] = raw.pop("pages")
            cases.append(GoldCase.model_validate(raw))
        except Exception as exc:  # noqa: BLE001 - re-raised with the line number
            raise ValueError(f"{path}:{n}: not a gold case ({exc})") from exc
    return cases


def default_corpus(gold: Path) -> Path:
    """The ``corpus`` folder beside the gold file's folder (``shared/gold/x.jsonl`` -> ``shared/corpus``)."""
    return Path(gold).resolve().parent.parent / "corpus"
