"""Which clause units state an amount or a cap: the units a claim's ``limit`` query is ranked among.

A handler checks a claim's amount against the sub-limit of the property claimed; that limit sits
in a special-limits list or a schedule among other amounts, and the cover clause that shares the
property's words would win an unscoped ranking. So triage ranks the ``limit`` query
(:mod:`longdoc.triage.queries`) only among the units of the ``limit`` role (:func:`unit_roles`),
and the best limit reaches the fusion with a first rank of its own (:mod:`longdoc.triage.ranking`).
The cue is how wordings of any kind state a cap (``up to $2,500 in total``, ``maximum sum
insured``, ``per article``), not any one wording's words.

Measured and dropped (docs/benchmarks.md, "Triage: other numbers and what was dropped"): the loss query ranked among
excluding units only (``We do not insure``, ``Exclusions``) lowered dev recall@3 (0.761 -> 0.522).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

ROLES = ("limit",)
"""Roles a query may be scoped to."""
_LIMIT = re.compile(
    r"[$€£¥]\s?\d|\b\d[\d,.]*\s?(?:dollars|euros|pounds|%)|\bup to\b|\bmaximum\b|\blimits?\b|\bsub-limit|"
    r"\bin total\b|\bper (?:item|article|person|loss|occurrence)\b|\bsum insured\b", re.IGNORECASE)


def unit_roles(heading_path: Sequence[str], text: str) -> frozenset[str]:
    """The roles of one unit (``heading_path`` unused today, kept for roles read from headings):
    ``limit`` when its text states an amount (``$500``, ``10%``) or a cap (``up to``, ``maximum``,
    ``in total``, ``per article``, ``sum insured``); empty otherwise."""
    return frozenset({"limit"}) if _LIMIT.search(text) else frozenset()
