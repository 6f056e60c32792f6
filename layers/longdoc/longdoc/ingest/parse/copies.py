"""Pages whose body repeats another page's body: copies, never running furniture.

A renewal notice issued as the insured's, the insurer's and the broker's copy, a schedule printed
twice, the same blank exhibit form three times: every line of such a page repeats on another page,
so a test of repetition alone reads the whole body as running headers and footers and empties the
page (the notice's renewal date and amounts were gone, a PDF of four identical pages had no text to
chunk). Repetition among copies is no evidence that a line is furniture; the furniture detection
(:func:`~longdoc.ingest.parse.cleanup.find_furniture`, :func:`~longdoc.ingest.parse.running.running_headers`)
therefore counts each group of copies as one page (:func:`copy_groups`), and every copy stays in the
text, indexed on its own page.

Two pages are copies when the lines they share (whitespace collapsed, counted as often as they occur
on both) carry at least :data:`COPY_SHARE` of the word characters of the longer of the two. Word
characters (letters and digits) weigh a line, so rules (``-----``) and blank lines weigh nothing and
a short per-copy line (``INSURER COPY``, ``Page 2 of 3``) little. Measured on the 32 PDFs of
``../shared/corpus`` (not used to choose the number; the notice of ``../shared/cases`` was): every
pair of distinct pages shares at most 0.66 (a signature page beside another party's), real copies
(the same exhibit form on four pages, one signature block twice) 0.95-0.97, the three copies of the
notice 0.82.

Groups are the connected pages under that relation. Candidates are found through the rarest lines of
a page (pigeonhole: a page sharing :data:`COPY_SHARE` of its weight shares one of the lines that
carry the rarest ``1 - COPY_SHARE`` of it), so a long document is not compared page by page.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

COPY_SHARE = 0.75
"""Two pages whose shared lines carry this share (0-1) of the longer page's word characters are copies."""
_WORD_CHAR = re.compile(r"\w")


def _lines(text: str) -> Counter[str]:
    """A page's non-blank lines, whitespace collapsed, with how often each occurs."""
    return Counter(" ".join(line.split()) for line in text.split("\n") if line.strip())


def _weight(lines: Counter[str]) -> int:
    """The word characters (letters, digits, ``_``) of ``lines``, each line as often as it occurs."""
    return sum(len(_WORD_CHAR.findall(line)) * n for line, n in lines.items())


def copy_groups(pages: list[str]) -> list[int]:
    """For each page (0-based, in order), the first page of its group of copies (module docstring).

    Args:
        pages: the text of each physical page (``"\\n"`` between lines).

    Returns:
        One 0-based index per page: the lowest page index of the group it belongs to; a page that
        is no copy of any other (and a page without word characters) is its own group. Raises nothing.
    """
    lines = [_lines(page) for page in pages]
    weights = [_weight(page) for page in lines]
    postings: dict[str, list[int]] = defaultdict(list)
    for index, page in enumerate(lines):
        for line in page:
            postings[line].append(index)
    parent = list(range(len(pages)))

    def root(i: int) -> int:
        """The representative of ``i``'s group (union-find with path halving)."""
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for index, page in enumerate(lines):
        if not weights[index]:
            continue
        for other in sorted(_candidates(index, page, weights[index], postings)):
            if other > index and _copies(page, lines[other], weights[index], weights[other]):
                a, b = root(index), root(other)
                parent[max(a, b)] = min(a, b)
    return [root(i) for i in range(len(pages))]


def _candidates(index: int, page: Counter[str], weight: int, postings: dict[str, list[int]]) -> set[int]:
    """The pages that share one of the lines carrying the rarest ``1 - COPY_SHARE`` of page ``index``'s
    weight: every copy of it is among them."""
    rarest = sorted(page, key=lambda line: (len(postings[line]), line))
    need = (1 - COPY_SHARE) * weight
    found: set[int] = set()
    carried = 0
    for line in rarest:
        found.update(postings[line])
        carried += len(_WORD_CHAR.findall(line)) * page[line]
        if carried > need:
            break
    found.discard(index)
    return found


def _copies(a: Counter[str], b: Counter[str], weight_a: int, weight_b: int) -> bool:
    """Whether pages with lines ``a`` and ``b`` (weights given) are copies (:data:`COPY_SHARE`)."""
    return _weight(a & b) >= COPY_SHARE * max(weight_a, weight_b) > 0


def copy_sets(groups: list[int], pages: list[str]) -> list[list[int]]:
    """The groups of two or more pages with text, as sorted 1-based page numbers, first page first.

    ``groups`` is :func:`copy_groups` of ``pages``."""
    members: dict[int, list[int]] = defaultdict(list)
    for index, first in enumerate(groups):
        if pages[index].strip():
            members[first].append(index + 1)
    return [found for _, found in sorted(members.items()) if len(found) > 1]



def identical(pages: list[str]) -> bool:
    """Whether ``pages`` hold the same lines in the same order (whitespace collapsed, blank lines aside)."""
    return len({tuple(" ".join(line.split()) for line in page.split("\n") if line.strip()) for page in pages}) == 1
