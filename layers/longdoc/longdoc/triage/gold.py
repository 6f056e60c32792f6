"""The gold file of ``longdoc eval triage``, read and checked whole before anything is ranked (issue 31).

JSON Lines, one invented claim a line (format in docs/triage.md)::

    {"id": "h01", "kind": "covered", "split": "dev", "claim": {"loss_date": "2023-02-14", ...},
     "gold_doc": "homeowners-wording-2023", "gold": ["3.4"]}

The fields are those of :class:`GoldClaim`. :func:`read_gold_lines` checks each line's shape and that
no ``id`` repeats; :func:`check_against` checks each line against the collection: the claim reads and
resolves to a wording in force (:func:`~longdoc.triage.terms.resolve`), ``gold_doc`` is a document of
the collection and is that wording or an endorsement in force (else nothing of it is ever ranked), each
``gold`` id is the id of a clause unit of those documents (a part id such as ``4.2#1`` as the band
prints it) or its base id or an enclosing level of one (the scorer's match,
:func:`~longdoc.triage.clauses.gold_keys`), and each ``gold_quotes`` quote is found by the
scorer's rule (:func:`quote_in` within one unit or two units that follow each other) somewhere in
their units, not only in the first k. A gold item that fails these can never count as found: today's
eval would report it as a miss. Each problem is one line ``FILE:LINE: what (claim ID)``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from longdoc.core.errors import TriageError
from longdoc.triage.claim import claim_from_json, decode_text
from longdoc.triage.clauses import Clause, gold_keys
from longdoc.triage.collections import Member
from longdoc.triage.service import claim_context
from longdoc.triage.terms import resolve

KINDS = ("covered", "excluded", "condition", "limit", "two_clauses", "paraphrase", "trap")
"""The claim kinds a handler sees (issue 31): the deciding clause grants, excludes, sets a condition
(a notice deadline, a report), caps (a sub-limit), needs two clauses, is told in plain words the
wording does not use, or the claim holds a phrase that matches another clause than the deciding one."""
SPLITS = ("dev", "test")
"""The usual split labels; any label of letters, digits, ``_`` or ``-`` (``test2``, ``holdout``) is
accepted: the report has one row per split, so a second held-out set keeps its own figure."""
_SPLIT = re.compile(r"[A-Za-z0-9_-]{1,40}")
"""``dev`` claims may be looked at while tuning; ``test`` claims are held out."""
QUOTE_COVER = 0.8
"""Share of a gold quote's words a unit must hold in order (the gold README's retrieval rule)."""

_Text = Annotated[str, Field(min_length=1)]


class GoldClaim(BaseModel):
    """One line of the gold file. ``pydantic.ValidationError`` for a missing or mistyped field or an
    unknown one (a misspelt ``gold_doc`` would otherwise be ignored)."""

    model_config = ConfigDict(extra="forbid")

    id: _Text = Field(description="the claim's id, unique in the file")
    kind: str | None = Field(None, description="one of KINDS; absent: '-'")
    split: str | None = Field(None, description="a label such as dev, test or test2; absent: dev")
    claim: dict[str, Any] = Field(description="the claim, as a --claim JSON file holds it")
    gold_doc: _Text | None = Field(None, description="the doc_id of the gold wording; absent: the one in force")
    gold: list[_Text] | None = Field(None, min_length=1, description="clause ids as the band cites them")
    gold_quotes: list[_Text] | None = Field(None, min_length=1, description="verbatim sentences of the wording")
    note: str | None = Field(None, description="the writer's comment; not read")


@dataclass(frozen=True)
class GoldLine:
    """A gold line that passed :class:`GoldClaim`: its 1-based ``line`` number and its JSON object."""

    line: int
    case: dict[str, Any]

    @property
    def id(self) -> str:
        """The claim's ``id``."""
        return str(self.case["id"])


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", unicodedata.normalize("NFKC", text).lower())


def quote_in(quote: str, text: str) -> bool:
    """True when ``text`` holds at least :data:`QUOTE_COVER` of ``quote``'s words in order (NFKC, case-folded)."""
    want, have = _words(quote), iter(_words(text))
    found = sum(1 for w in want if any(h == w for h in have))
    return bool(want) and found >= QUOTE_COVER * len(want)


def _shape_problems(values: Any) -> list[str]:
    if not isinstance(values, dict):
        return ['not a JSON object (a gold claim is {"id", "claim", "gold" or "gold_quotes", ...})']
    try:
        GoldClaim.model_validate(values)
    except ValidationError as exc:
        return [_field_problem(e) for e in exc.errors()]
    out = []
    if values.get("kind") not in (None, *KINDS):
        out.append(f"unknown kind {values['kind']!r} (kinds: {', '.join(KINDS)})")
    split = values.get("split")
    if split is not None and not (isinstance(split, str) and _SPLIT.fullmatch(split)):
        out.append(f"bad split {split!r} (a label of letters, digits, _ or -, such as {' or '.join(SPLITS)})")
    if bool(values.get("gold")) == bool(values.get("gold_quotes")):
        out.append('give "gold" (clause ids) or "gold_quotes" (verbatim wording), exactly one of them')
    return out


def _field_problem(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"unknown field {where!r} (fields: {', '.join(GoldClaim.model_fields)})"
    if error["type"] == "missing":
        return f"missing field {where!r}"
    return f"field {where!r}: {error['msg']}"


def _named(path: Path, n: int, problem: str, values: Any) -> str:
    claim_id = values.get("id") if isinstance(values, dict) else None
    return f"{path}:{n}: {problem}" + (f" (claim {claim_id})" if isinstance(claim_id, str) and claim_id else "")


def read_gold_lines(path: Path) -> tuple[list[GoldLine], list[str]]:
    """The well-formed lines of the gold file and one problem per fault (``FILE:LINE: ... (claim ID)``):
    not JSON, not the :class:`GoldClaim` shape (the field named), an unknown ``kind`` or ``split``,
    neither or both of ``gold`` / ``gold_quotes``, an ``id`` already used (the line of its first use
    named), no lines at all, or a file that is not text (UTF-8, or UTF-16 / UTF-32 with a byte-order mark:
    :func:`~longdoc.triage.claim.decode_text`). Blank lines are skipped. OSError propagates."""
    try:
        text = decode_text(path.read_bytes(), str(path), "gold file")
    except TriageError as exc:
        return [], [str(exc)]
    lines: list[GoldLine] = []
    problems: list[str] = []
    first: dict[str, int] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            values = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{n}: not JSON ({exc})")
            continue
        found = _shape_problems(values)
        if not found and values["id"] in first:
            found = [f"duplicate id {values['id']!r} (first on line {first[values['id']]})"]
        problems += [_named(path, n, p, values) for p in found]
        if not found:
            first[values["id"]] = n
            lines.append(GoldLine(n, values))
    if not lines and not problems:
        problems.append(f"no gold claims in {path}")
    return lines, problems


def document_spans(units: Sequence[Clause]) -> list[str]:
    """The texts a gold quote may be found in: each unit, and each two units of one document that follow
    each other in ``units`` (document order), joined by a space, as the scorer joins them."""
    return [u.text for u in units] + [a.text + " " + b.text for a, b in pairwise(units) if a.doc_id == b.doc_id]


def check_against(path: Path, lines: Sequence[GoldLine], collection: str, members: list[Member],
                  units_of: Callable[[Sequence[str]], list[Clause]]) -> list[str]:
    """One problem per gold item that can never be found in ``collection`` (module docstring), each
    ``FILE:LINE: ... (claim ID)``; empty when every line is usable. ``units_of(doc_ids)`` gives the
    clause units of those documents in document order (the units ranked). Blob store errors propagate."""
    known = {m.doc_id for m in members}
    problems = []
    for g in lines:
        problems += [f"{path}:{g.line}: {p} (claim {g.id})"
                     for p in _line_problems(g.case, collection, members, known, units_of)]
    return problems


def _line_problems(case: dict[str, Any], collection: str, members: list[Member], known: set[str],
                   units_of: Callable[[Sequence[str]], list[Clause]]) -> list[str]:
    gold_doc = case.get("gold_doc")
    unknown = ([f"gold_doc {gold_doc!r} is not a document of collection {collection!r} "
                f"(documents: {', '.join(sorted(known))})"] if gold_doc is not None and gold_doc not in known else [])
    try:
        claim = claim_from_json(case["claim"])
        loss, lob = claim_context(claim, members, None, None)
        resolution = resolve(collection, members, lob, loss)
    except TriageError as exc:
        return [*unknown, f"claim: {exc}"]
    if unknown:
        return unknown
    target = gold_doc or resolution.wording.doc_id
    if target not in {m.doc_id for m in resolution.members}:
        return [f"gold_doc {target!r} is not in force for this claim ({lob}, loss date {loss}: "
                f"{resolution.wording.doc_id} is), so none of its clauses is ranked"]
    others = [e.doc_id for e in resolution.endorsements if e.doc_id != target]
    units = units_of([target, *others])
    where = target + (" or its endorsements in force" if others else "")
    if case.get("gold"):
        ids = {key for u in units for key in gold_keys(u.clause_id)}
        return [f"gold clause {g!r} is not a clause of {where}" for g in case["gold"] if str(g).casefold() not in ids]
    spans = document_spans(units)
    return [f"gold quote {_short(q)!r} is not in the text of {where} ({QUOTE_COVER:.0%} of its words in order, "
            "within one clause unit or two that follow each other)"
            for q in case["gold_quotes"] if not any(quote_in(q, s) for s in spans)]


def in_line_order(path: Path, problems: Sequence[str]) -> list[str]:
    """``problems`` sorted by the line they name (``FILE:LINE: ...``; a problem of the whole file first),
    the order of each line's own problems kept."""
    prefix = re.compile(re.escape(f"{path}:") + r"(\d+): ")

    def line_of(problem: str) -> int:
        found = prefix.match(problem)
        return int(found.group(1)) if found else 0

    return sorted(problems, key=line_of)


def _short(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
