"""The polarity rule: a text that cites a passage must keep its negations, exceptions and modal verbs.

Shared by extraction's ``clause_text`` check (:func:`longdoc.extract.citations.check_clause_support`),
the summary statement check (:mod:`longdoc.summarize.checks`) and the triage reasons
(:mod:`longdoc.triage.answer`), so there is one rule (ours) and one wording of its failures.

How it reads a text (no parser; word order is not compared):

1. **Alignment**: each sentence of the text is compared with the cited sentence it shares most
   content words with (several equally close ones: a problem only if every one has it) (stop words, negations and modals aside; words compared by a crude stem,
   :func:`word_key`, ``remedied`` ~ ``remedy``, ``subcontractors`` ~ ``subcontractor``).
2. **Cues** (:data:`NEGATIONS`, one class: a negation, ``without``, or an exception ``except``,
   ``unless``, ``save for``, ``other than``; ``n't``/``cannot``/``non-`` read as ``not``): each
   is attached to its *heads*, the first two content words after it in its clause (three after
   ``neither``/``no``/``none``, which come before a noun phrase; ``nor`` after ``neither`` or
   ``not`` continues that negation; in ``no later than``, ``not less than`` (a bound) the cue heads the comparative alone, so
   ``within 14 days`` keeps it and ``later than 14 days`` drops it; adverbs
   such as ``otherwise``, ``further`` skipped; a clause ends at ``, ; : ( )`` and before
   ``but``/``provided``/``if``/``unless``/``except``), and it *covers* every content word after
   it to the clause's end. Modal verbs :data:`PERMISSIONS` (``may``, ``can``) and
   :data:`OBLIGATIONS` (``shall``, ``must``) are cues of their own class when not negated
   (``may not``, ``shall not`` are negations, so ``may not`` = ``shall not``).
3. **Dropped**: a cue of the cited sentence whose first head the text repeats, while no cue of
   the same class in the text covers any of its heads: ``breach remedied within 30 days`` for
   ``breach that is not remedied within 30 days``; ``the fee shall increase otherwise`` for
   ``shall not otherwise increase``; ``Each party excludes`` for ``Neither party excludes``.
   Obligation modals may be dropped (``the Supplier provides`` for ``shall provide`` is the same
   duty); a permission may not (``we refuse`` for ``we may refuse``).
4. **Added** (``added=True``): the same the other way round (a cue of the text whose first head
   the cited sentence has, uncovered there: ``terminate without cause`` for ``terminate for
   cause``; ``must assign`` for ``may assign``), and any cue class the text uses that no cited
   passage uses at all.

So ``The fee does not otherwise increase`` and ``The Supplier may not appoint further
subcontractors without consent`` keep the meaning of ``shall not otherwise increase`` and ``shall
not appoint any further subcontractor without the Customer's prior written consent``, and a
fragment that does not repeat the negated word (``fixed term of the lease`` for ``is not
permitted to terminate this lease during the fixed term``) is not a dropped negation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

NEGATIONS = frozenset({"not", "no", "never", "neither", "nor", "none", "nothing", "nobody", "without", "except",
                       "excepting", "unless", "save", "other than", "fail", "fails", "failed", "failing", "failure"})
"""Negation and exception cues (one class: each turns what follows it into its opposite or a carve-out)."""
PERMISSIONS = frozenset({"may", "can", "might", "could"})
"""Modal verbs of permission."""
OBLIGATIONS = frozenset({"shall", "must"})
"""Modal verbs of obligation (``will`` is left out: it is also a plain future)."""
POLARITY_WORDS = NEGATIONS | PERMISSIONS | OBLIGATIONS | {"cannot"}
"""Every word the rule reads as a cue (negations, exceptions, modal verbs)."""
STEM_CHARS = 8
"""Word keys are cut to 8 characters after suffix stripping (:func:`word_key`)."""
TOKEN = re.compile(r"[^\W_]+(?:[.,/-][^\W_]+)*", re.UNICODE)
"""A word or number token (``4.2``, ``$247.83`` without its symbol, ``non-refundable``)."""

_STOP = frozenset({"a", "an", "the", "this", "that", "these", "those", "such", "any", "all", "each", "every",
                   "either", "both", "of", "to", "in", "on", "at", "by", "for", "from", "with", "within", "into",
                   "onto", "upon", "under", "over", "than", "as", "or", "and", "nor", "is", "are", "be", "been",
                   "being", "was", "were", "am", "has", "have", "had", "do", "does", "did", "it", "its", "it's",
                   "they", "them", "their", "he", "she", "his", "her", "we", "our", "you", "your", "i", "which",
                   "who", "whom", "whose", "what", "when", "where", "while", "there", "here", "thereof", "hereof",
                   "hereto", "herein", "thereunder", "hereunder", "so", "then", "also", "only", "during", "after",
                   "before", "until", "per", "via", "between", "among", "about", "across", "through", "throughout",
                   "towards"})
_ADVERBS = frozenset({"otherwise", "further", "also", "only", "even", "yet", "ever", "always", "again", "then",
                      "thereby", "hereby", "however", "still", "more", "less", "later", "earlier", "longer"})
_DETERMINERS = frozenset({"neither", "nor", "no", "none", "nothing", "nobody"})
"""Negations before a noun phrase: they head three words (``Neither Affiliate nor Station shall be liable``)."""
_COMPARATIVES = frozenset({"later", "earlier", "sooner", "more", "less", "fewer", "greater", "longer", "shorter"})
"""``no later than``, ``not less than``: a bound, its negation heads the comparative alone (keyed
``later than``, so a reason's ``26 days later`` is another word)."""
_BREAK_WORDS = frozenset({"but", "provided", "whereas", "if", "unless", "except", "excepting"})
_SAVE_NEXT = frozenset({"for", "that", "as", "where", "in", "to", "insofar", "with", "only"})
_WORD = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:['’][^\W\d_]+)*(?:-[^\W\d_]+)*|[,;:()\[\]]", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])[\"”’)]*\s+(?=[^a-z\s])|\n\s*\n|\n(?=\s*(?:[-*•#>]|\(?\w{1,4}[.)]\s))")


def tokens(text: str) -> list[str]:
    """The lower-cased :data:`TOKEN` tokens of ``text``."""
    return [t.lower() for t in TOKEN.findall(text)]


def word_key(word: str) -> str:
    """A crude stem: ``'s``, a plural or ``-ed``/``-ing`` stripped, a final ``e`` dropped, cut to
    :data:`STEM_CHARS` (``remedied`` = ``remedy``, ``excludes`` = ``exclude``, ``term`` != ``terminate``)."""
    w = word.lower().replace("’", "'").removesuffix("'s")
    for suffix, repl, keep in (("ies", "y", 2), ("ied", "y", 2), ("ing", "", 3), ("ed", "", 3), ("es", "", 3),
                               ("s", "", 3)):
        if w.endswith(suffix) and len(w) - len(suffix) >= keep and not w.endswith("ss"):
            w = w[: len(w) - len(suffix)] + repl
            break
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w[:STEM_CHARS]


@dataclass(frozen=True)
class Cue:
    """A cue of a sentence: ``word`` as written, its ``kind`` (``neg``, ``permit``, ``oblige``), its
    ``heads`` (key and word position of the first two content words after it), the word positions
    it ``covers``, a ``phrase`` and its first head as written (``head_word``)."""

    word: str
    kind: str
    heads: tuple[tuple[str, int], ...]
    covers: frozenset[int]
    phrase: str
    head_word: str = ""


@dataclass(frozen=True)
class Sentence:
    """One sentence: its content word ``keys``, the key at each word position (``key_at``, None
    for other words), its :class:`Cue` s and its lower-cased words that follow another word
    (``subjects``: a word opening a fragment has no subject before it)."""

    keys: frozenset[str]
    key_at: tuple[str | None, ...]
    cues: tuple[Cue, ...]
    subjects: frozenset[str] = frozenset()

    def depth(self, at: int, kind: str) -> int:
        """How many cues of ``kind`` cover position ``at`` (``without such consent shall not be valid``: 2 on ``valid``)."""
        return sum(1 for c in self.cues if c.kind == kind and at in c.covers)

    def most(self, key: str, kind: str) -> int:
        """The largest :meth:`depth` of ``kind`` over the positions holding ``key`` (0 when none)."""
        return max((self.depth(at, kind) for at, k in enumerate(self.key_at) if k == key), default=0)


def _words(sentence: str) -> list[str]:
    """The sentence's lower-cased words and clause marks, contractions and ``non-`` read as ``not``."""
    text = re.sub(r"n['’]t\b", " not", sentence)
    text = re.sub(r"\bcannot\b", "can not", text, flags=re.IGNORECASE)
    out: list[str] = []
    for token in _WORD.findall(text):
        low = token.lower()
        if low.startswith("non-") and len(low) > 4:
            out += ["not", low[4:]]
        else:
            out.append(low)
    return out


_NEEDS_NEXT = {"save": _SAVE_NEXT, "failure": frozenset({"to"}), "other": frozenset({"than"})}
"""Cue words only before these (``save for``, ``failure to``, ``other than``)."""


def _negation(words: list[str], at: int) -> bool:
    """True when ``words[at]`` is a negation or exception cue (module docstring)."""
    word = words[at]
    nxt = words[at + 1] if at + 1 < len(words) else ""
    if word in _NEEDS_NEXT:
        return nxt in _NEEDS_NEXT[word]
    if word == "no" and nxt[:1].isdigit():
        return False  # "No. 4"
    if word == "nor" and any(w in {"neither", "not", "no", "never"} for w in words[:at]):
        return False  # "neither A nor B", "not A nor B": one negation
    return word in NEGATIONS


def _bound(words: list[str], at: int) -> bool:
    """True for ``no``/``not`` before a comparative and ``than`` (``no later than 14 days``)."""
    return words[at] in ("no", "not") and words[at + 1:at + 2] != [] and words[at + 1] in _COMPARATIVES and (
        words[at + 2:at + 3] == ["than"])


def _kind(words: list[str], at: int) -> str | None:
    """The cue class of ``words[at]`` (``neg``, ``permit``, ``oblige``), or None when it is no cue there."""
    word = words[at]
    if _negation(words, at):
        return "neg"
    if word in PERMISSIONS or word in OBLIGATIONS:
        rest = [w for w in words[at + 1:at + 3] if w not in _ADVERBS]
        if rest[:1] == ["not"] or rest[:1] == ["never"]:
            return None  # "may not", "shall never": the negation is the cue
        start = max((j for j in range(at) if not words[j][:1].isalnum() or words[j] in _BREAK_WORDS), default=-1)
        if any(_negation(words, j) for j in range(start + 1, at)):
            return None  # "No subcontractor may be appointed": a prohibition, read through its "no"
        return "permit" if word in PERMISSIONS else "oblige"
    return None


def _content(word: str) -> bool:
    return word[:1].isalnum() and word not in _STOP and word not in POLARITY_WORDS and word != "than"


def read_sentence(sentence: str) -> Sentence:
    """The content keys and cues of one sentence (module docstring, steps 1-2)."""
    words = _words(sentence)
    key_at = tuple((f"{w} than" if w in _COMPARATIVES and words[j + 1:j + 2] == ["than"] else word_key(w))
                   if _content(w) else None for j, w in enumerate(words))
    cues: list[Cue] = []
    for at, word in enumerate(words):
        kind = _kind(words, at)
        if kind is None:
            continue
        end = next((j for j in range(at + 1, len(words))
                    if not words[j][:1].isalnum() or words[j] in _BREAK_WORDS or _kind(words, j) == "neg"
                    and words[j] in {"except", "excepting", "unless", "save"}), len(words))
        after = [j for j in range(at + 1, end) if key_at[j] is not None]
        heads = [j for j in after if words[j] not in _ADVERBS and not words[j][:1].isdigit()
                 and not words[j].endswith("ly")][:3 if word in _DETERMINERS else 2]
        if _bound(words, at):
            heads = after = [at + 1]  # "no later than": negates "later" alone
        phrase = " ".join(words[max(at - 1, 0):at + 3])
        cues.append(Cue("other than" if word == "other" else word, kind, tuple((str(key_at[j]), j) for j in heads),
                        frozenset(after), phrase, words[heads[0]] if heads else ""))
    return Sentence(frozenset(k for k in key_at if k), key_at, tuple(cues), frozenset(words[1:]))


def sentences(text: str) -> list[Sentence]:
    """The :class:`Sentence` s of ``text`` (split at ``. ! ?`` before a capital, blank lines and list items)."""
    return [read_sentence(s) for s in _SENTENCE.split(text) if s and s.strip()]


def _aligned(sentence: Sentence, cited: list[Sentence]) -> list[Sentence]:
    """The cited sentences sharing most content keys with ``sentence`` (on a tie, those with the
    fewest other keys: the closest; several when a document repeats a sentence), or none."""
    def score(c: Sentence) -> tuple[int, int]:
        return len(sentence.keys & c.keys), -len(c.keys ^ sentence.keys)

    best = max((score(c) for c in cited), default=(0, 0))
    return [c for c in cited if score(c) == best] if best[0] else []


def _unmatched(own: Sentence, other: Sentence, kinds: frozenset[str]) -> Cue | None:
    """The first cue of ``own`` (of ``kinds``) that ``other`` lacks: ``other`` repeats its first head,
    and on every head both share ``other`` has fewer cues of that kind covering it (``not``
    over ``without``: two). A permission
    counts only when ``other`` repeats its head as written after some other word (``we refuse``
    for ``we may refuse``; ``termination by either party`` names the right, and a fragment opening
    with ``refuse a claim`` has no subject: neither drops it)."""
    for cue in own.cues:
        if cue.kind not in kinds or not cue.heads or cue.heads[0][0] not in other.keys:
            continue
        if cue.kind == "permit" and cue.head_word not in other.subjects:
            continue
        shared = [(key, at) for key, at in cue.heads if key in other.keys]
        if all(other.most(key, cue.kind) < own.depth(at, cue.kind) for key, at in shared):
            return cue
    return None


def polarity_problem(text: str, passages: Sequence[str], what: str = "clause_text",
                     added: bool = True) -> str | None:
    """Why ``text`` changes the polarity of the cited ``passages`` (module docstring), or None.

    ``text``/``passages``: raw text of the statement (clause text, reason) and of each cited
    passage (quote, section text); ``what`` names the text in the message (``"the statement"``);
    ``added=False`` checks only dropped cues (a triage reason may say "not" in its own words).
    A ``text`` that is a run of a passage's own words (case and whitespace aside: clause text
    that copies a quote, or stops mid-sentence) keeps the passage's meaning as far as it goes:
    None, since it repeats every cue it covers.
    """
    flat = " ".join(text.split()).lower()
    if flat and any(flat in " ".join(p.split()).lower() for p in passages):
        return None
    cited = [s for p in passages for s in sentences(p)]
    own = sentences(text)
    problem = _aligned_problem(own, cited, what, added)
    if problem is None and added:
        words = {w for p in passages for w in _words(p)}
        used = {c.kind for s in cited for c in s.cues}
        used |= {"permit"} if words & PERMISSIONS else set()
        used |= {"oblige"} if words & OBLIGATIONS else set()
        extra = sorted({c.word for s in own for c in s.cues if c.kind not in used})
        if extra:
            return f"{what} says {', '.join(extra)} but no cited text does; keep the document's meaning"
    return problem


def _aligned_problem(own: list[Sentence], cited: list[Sentence], what: str, added: bool) -> str | None:
    """The first dropped (then, with ``added``, added) cue of ``own`` against its aligned cited
    sentence; with several equally close ones, a problem only if every one of them has it."""
    for sentence in own:
        problems = [_problem(sentence, match, what, added) for match in _aligned(sentence, cited)]
        if problems and all(problems):
            return problems[0]
    return None


def _problem(sentence: Sentence, match: Sentence, what: str, added: bool) -> str | None:
    """Why ``sentence`` changes the polarity of its aligned cited sentence ``match``, or None."""
    cue = _unmatched(match, sentence, frozenset({"neg", "permit"}))
    if cue is not None:
        return (f"{what} drops {cue.word!r} from the cited text's {cue.phrase!r}; a dropped negation, "
                "exception or modal verb changes the meaning")
    cue = _unmatched(sentence, match, frozenset({"neg", "permit", "oblige"})) if added else None
    if cue is not None:
        return f"{what} says {cue.word!r} ({cue.phrase!r}) where the cited text does not; keep the document's meaning"
    return None
