"""The wording in force: one wording per line of business per term, resolved at the loss date.

A member's period is ``effective_from``..``effective_to`` (ISO dates, both ends in force; an
open end is unbounded). A wording without either date falls back to a ``term`` written as
an ISO interval (``2024-01-01/2024-12-31``); a wording with neither is never in force (it
is named in the error). An endorsement is in force when its own period (its wording's, when
it has none) contains the loss date. Dates compare as ISO strings, which order like dates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from longdoc.core.errors import TriageError
from longdoc.triage.collections import Member


def parse_date(value: str, what: str = "loss date") -> str:
    """``value`` as an ISO date string ``YYYY-MM-DD``; :class:`TriageError` naming ``what`` otherwise."""
    text = str(value).strip()
    try:
        return date.fromisoformat(text).isoformat() if len(text) == 10 else _bad(text, what)
    except ValueError:
        return _bad(text, what)


def _bad(text: str, what: str) -> str:
    raise TriageError(f"{what} {text!r} is not a date (expected YYYY-MM-DD)", "loss_date")


def period(member: Member) -> tuple[str | None, str | None]:
    """The member's (start, end) as ISO dates, from its effective dates or an ISO-interval ``term``."""
    start, end = member.effective_from, member.effective_to
    if start is None and end is None and member.term and "/" in member.term:
        left, _, right = member.term.partition("/")
        try:
            return date.fromisoformat(left.strip()).isoformat(), date.fromisoformat(right.strip()).isoformat()
        except ValueError:
            return None, None
    return start, end


def dated(member: Member) -> bool:
    """True when the member has a start or an end date (else it can never be resolved by date)."""
    return any(period(member))


def in_force(member: Member, on: str) -> bool:
    """Whether ``on`` (ISO date) falls in the member's period (an undated member: never)."""
    start, end = period(member)
    if start is None and end is None:
        return False
    return (start is None or start <= on) and (end is None or on <= end)


def _label(member: Member) -> str:
    start, end = period(member)
    return f"{member.doc_id} ({start or ''}..{end or ''})" if (start or end) else f"{member.doc_id} (no effective dates)"


@dataclass(frozen=True)
class Resolution:
    """The wording in force at ``loss_date`` for ``line_of_business`` and its endorsements in force."""

    line_of_business: str
    loss_date: str
    wording: Member
    endorsements: list[Member]

    @property
    def members(self) -> list[Member]:
        """The wording, then its endorsements: the only documents whose clauses are ranked."""
        return [self.wording, *self.endorsements]


def same_line(a: str | None, b: str) -> bool:
    """Line-of-business names compare case-insensitively, surrounding space ignored."""
    return a is not None and a.strip().lower() == b.strip().lower()


def resolve(collection: str, members: list[Member], line_of_business: str, loss_date: str) -> Resolution:
    """The one wording of ``line_of_business`` in force at ``loss_date``, with its endorsements in force.

    Raises :class:`TriageError` with one line naming the documents: no wording of that line
    (listing the lines there are), none in force at the date (listing every term), or two
    in force (overlapping terms).
    """
    on = parse_date(loss_date)
    wordings = [m for m in members if not m.is_endorsement and same_line(m.line_of_business, line_of_business)]
    if not wordings:
        lines = sorted({m.line_of_business for m in members if m.line_of_business})
        raise TriageError(f"collection {collection!r} has no wording for line of business {line_of_business!r} "
                          f"(lines: {', '.join(lines) or 'none set'})", "line_of_business")
    live = [w for w in wordings if in_force(w, on)]
    if not live:
        raise TriageError(f"no {line_of_business} wording of collection {collection!r} is in force on {on}; "
                          f"terms: {', '.join(_label(w) for w in wordings)}", "loss_date")
    if len(live) > 1:
        raise TriageError(f"{len(live)} {line_of_business} wordings of collection {collection!r} are in force on "
                          f"{on} (overlapping terms): {', '.join(_label(w) for w in live)}; fix their effective dates",
                          "collection")
    wording = live[0]
    endorsements = [m for m in members if m.endorses == wording.doc_id
                    and (in_force(m, on) if dated(m) else True)]
    return Resolution(line_of_business, on, wording, endorsements)
