"""Printed page numbers read from running headers and footers (:func:`labels_from_furniture`).

the printed page number is a number (arabic or lower-case roman) at the start or end of a furniture
line or after ``Page``, whose difference to the physical page index is the same on at least
:data:`MIN_REPEATS` pages of one template. The PDF's own page labels (ISO 32000-1, 12.4.2 "Page
Labels"), when present, win over this.
"""

from __future__ import annotations

import re
from collections import defaultdict

from longdoc.core.text import roman_to_int
from longdoc.ingest.parse.cleanup import MIN_REPEATS, template
from longdoc.ingest.models import Furniture

_LABEL_CANDIDATES = (
    re.compile(r"^(\d{1,5}|[ivxlc]{1,7})\b"),
    re.compile(r"\b(\d{1,5}|[ivxlc]{1,7})$"),
    re.compile(r"\b[Pp]age\s+(\d{1,5}|[ivxlcIVXLC]{1,7})\b"),
)



def labels_from_furniture(page_count: int, furniture: list[Furniture]) -> list[str | None]:
    """Read printed page numbers from running headers/footers.

    Returns one label per physical page (``None`` where none is printed). A candidate number
    (see the module docstring) counts only when ``value - page`` is the same constant on at
    least :data:`MIN_REPEATS` pages of one template; templates are tried most-covering first
    and never overwrite a page already labelled.
    """
    votes: dict[tuple[str, bool, int], dict[int, str]] = defaultdict(dict)
    for item in furniture:
        base = template(item.text)
        for pattern in _LABEL_CANDIDATES:
            for m in pattern.finditer(item.text.strip()):
                token = m.group(1)
                roman = not token.isdigit()
                value = roman_to_int(token) if roman else int(token)
                if value is None:
                    continue
                votes[(base, roman, value - item.page)].setdefault(item.page, token)
    labels: list[str | None] = [None] * page_count
    for _, pages in sorted(votes.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if len(pages) < MIN_REPEATS:
            break
        for page, token in pages.items():
            if labels[page - 1] is None:
                labels[page - 1] = token
    return labels


