"""A claim read as a handler reads it: the loss apart from the form, several queries, the wording's terms.

:func:`claim_queries` turns a :class:`~longdoc.triage.claim.Claim` into named queries, each ranked
on its own and fused (:mod:`longdoc.triage.ranking`):

- ``loss``: what happened, to what, where, when: the form's descriptive fields and the note's
  sentences that are not condition-like, without the form's boilerplate (policy number, names,
  amounts, dates, ids: they stay in CASE_FACTS, not in the query), followed by the wording's
  defined terms for its plain words (below);
- ``event``: the form's short description of the loss (or the note's first sentence);
- ``condition``: the note's condition-like sentences (notice, reports, deadlines, proof, delay),
  and any sentence telling the claimant's conduct after the loss in the words of the vocabulary's
  condition entries (``told the other driver it was his fault``, ``threw the carpet out``), with
  those entries' terms the wording uses (``admission``, ``inspection``); kept apart so that a
  deadline phrase does not drag the loss query to the clause sharing it;
- ``sentence N``: each other loss sentence on its own, when the note has several (the peril and
  the damaged property often sit in different sentences);
- ``limit``: the form's description (and its wording terms) with the words wordings state caps in
  (:data:`LIMIT_WORDS`), when the claim has an amount, ranked **only among the units that state an
  amount or a cap** (:mod:`longdoc.triage.routing`): a handler checks the sub-limit of the property
  claimed, and the special-limits list or schedule row is found among amounts, not among the
  cover clauses that share the property's words. When the claim asks how much is payable (``Calculate maximum
  payable``, ``Quantum is the issue``, ``subject to policy deductions``: :data:`_QUANTUM`), that
  sentence joins it with the words of an excess, it weighs as the loss query and its first hit is pinned;
- ``wording terms``: the words wordings use for the loss's lay words (``suitcase`` -> ``baggage``),
  from the packaged loss vocabulary (:mod:`longdoc.triage.vocabulary`), only those the wording
  itself uses; they also join the ``loss`` query;
- ``defined terms``: the wording's own defined terms (its definitions section, ``"Flood" means
  ...``) whose definitions share the loss's plain words (:func:`definitions`, :func:`defined_terms`).

No rule here names a wording's words: the cues are the claim form's field names, sentence
shape, and the definitions each wording itself gives.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from longdoc.core.text import is_abbreviation
from longdoc.core.values import without_values
from longdoc.search.bm25 import BM25, bm25_tokens
from longdoc.triage.claim import Claim, is_fact_field
from longdoc.triage.vocabulary import MAX_WORDING_TERMS, condition_entries, wording_terms

_BOILERPLATE_FIELD = re.compile(
    r"amount|date|number|_no$|^no$|_id$|^id$|limit|deductible|sum|insured|name|claimant|address|phone|email|"
    r"policy|adjuster|handler|status|currency|reference|broker|agent|contact|premium|reserve|paid", re.IGNORECASE)
_DESCRIPTION_FIELD = re.compile(r"descr|summary|what|loss|incident|event|cause|circumstance|peril", re.IGNORECASE)
_CONDITION = re.compile(
    r"\b(?:notif\w*|notice|report\w*|police|told (?:us|the|them|his|her|their)|inform\w*|deadline|"
    r"(?:\w+ )?(?:days?|weeks?|months?|years?) (?:later|after (?:the|it|coming|returning))|waited|"
    r"proof|receipts?|documents?|certificate|statement|sworn|declaration|written|in writing|letter|"
    r"confirmation|verif\w*|claim form|filed)\b", re.IGNORECASE)
_REPORTING_LEAD = re.compile(
    r"^\W*(?:(?:the )?(?:insured|policyholder|claimant|customer|tenant|caller|owner|member)\s+)?"
    r"(?:reports?|reported|advises?|advised|states?|stated|says|said)\s+(?:that\s+|(?=an?\s))", re.IGNORECASE)
"""A sentence's opening reporting verb before ``that`` or ``a``/``an`` (``Insured reports a break-in ...``):
how an adjuster tells the loss, not a reporting duty, so it does not make the sentence condition-like
(``Insured reported the loss to us 40 days after`` stays one)."""
_FORM_WORDS = re.compile(r"\b(?:claims?|filed|this|insurer)\b", re.IGNORECASE)
PIN_RANK = 3
"""A pinned query's first hit ranks at worst this (1-based): a condition the claim's conduct points at
is read by the model whatever the loss queries outvote it with (:attr:`Query.pin`)."""
LIMIT_WORDS = "limit maximum up to in total each per item sum insured"
"""Words with which wordings state a cap (the ``limit`` query adds them to the damaged property)."""
_PEOPLE = re.compile(r"\b(?:the )?(?:insured|policyholder|claimant|customer)(?:'s|’s)?\b", re.IGNORECASE)
"""The claim form's words for the person claiming: every wording has them, they select no clause."""
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_DEFINITION = re.compile(r"^\s*[\"“']?([A-Z][\w’'/()&-]*(?:\s+[\w’'/()&-]+){0,5}?)[\"”']?\s*(?:\([^)]{1,40}\)\s*)?"
                         r"(?:means|shall mean|includes|refers to|is defined as)\b", re.MULTILINE)
_ID_LIKE = re.compile(r"\b[A-Z]{1,5}[-/]?\d[\w/-]*\b")
MIN_SHARED_WORDS = 2
"""A definition maps a claim's plain words to its term when it shares at least this many distinct words,"""
RARE_SHARE = 0.05
"""... one of them rare in the wording (in at most this share of its clauses: ``overflow``, not ``loss``)."""
MAX_TERMS = 2
"""Defined terms added per claim (the best-scoring definitions)."""
LIMIT_WEIGHT = 0.5
"""Fusion weight of the ``limit`` query (ranked among the units that state an amount or a cap).
Measured (docs/benchmarks.md, "Triage: the limit query's weight"): 0.3 -> 0.5 lifted recall@3 on the shared wordings
(0.798 -> 0.817) and set 11a (0.536 -> 0.607), left the dev set and set 11b as they were, and left
the blind set 12 unchanged (0.607, 0.714); 0.4 and 0.6 gained less, 0.8 lost on the shared wordings."""
EXCESS_WORDS = "excess deductible first"
"""Words wordings state the part of each claim they do not pay in; the asked ``limit`` query adds them."""
ASKED_LIMIT_WEIGHT = 1.0
"""The ``limit`` query's weight when the claim asks how much is payable (:data:`_QUANTUM`): the
handler's question names what decides the claim, so the limit ranks as the loss does, and pinned."""
_QUANTUM = re.compile(
    r"\b(?:quantum,? (?:is|remains) (?:the|an|in) (?:\w+ )?(?:issue|question|dispute)|"
    r"quantum (?:is |remains )?(?:still )?(?:yet )?to be (?:assessed|determined|calculated|agreed|confirmed)|"
    r"(?:assess|calculate|determine|confirm|check|advise|establish|work out|let (?:us|me) know|tell (?:us|me))\w*"
    r" (?:us |me )?(?:of |on )?(?:the )?"
    r"(?:quantum|amount payable|payable amount|payable benefit|benefit payable|"
    r"(?:applicable )?maximum(?= payable| benefit| amount| sum| we can pay|\s*[.;?]|$))|"
    r"maximum (?:payable|amount payable|benefit payable|we can pay)|"
    r"how much\b[^.?!;]{0,40}?\b(?:pay|paid|payable|paying|reimbursed|reimburse|owe|owed|settle)\b|"
    r"what (?:amount|sum|benefit) (?:is|would be|will be|can be) (?:payable|paid|due)|"
    r"what(?:'s| is| are) the (?:maximum|max) (?:benefit|amount|payable|payout|sum|we can pay)|"
    r"what(?:'s| is| are) the (?:policy |benefit |item )?(?:sub-?)?(?:limit|maximum)s? (?:for|on|under)\b"
    r"(?! (?:filing|reporting|report|notifying|notice|notification|making|submitting|lodging|speed|weight|"
    r"time|age|days?|hours?)\b)|"
    r"settlement (?:amount|figure|sum)|within (?:the )?(?:policy |benefit |item )?(?:sub-?)?limits?\b|"
    r"apply the (?:[\w-]+ )?(?:per[- ][\w-]+ (?:and total )?|total |policy |benefit |item |sub-)(?:caps|limits?)\b|"
    r"sub-?limits? (?:apply|applies)|subject to (?:the )?policy (?:deductions|excess|deductible)|"
    r"subject to the (?:excess|deductible))",
    re.IGNORECASE)
"""A claim's question about the amount payable (``Quantum is the issue``, ``Calculate maximum payable``,
``Apply the per-visit and total caps``, ``How much will we pay?``): how an adjuster asks for the
sub-limit, in any line; ``What is the limit for filing ...`` (a time or other limit) asks nothing."""
_NEGATED = re.compile(r"\b(?:no|not|never|neither|nor|without|do not|don't|does not|doesn't)\b|n't\b",
                      re.IGNORECASE)
"""A sentence that says the quantum is not the question (``Amount payable is not in dispute``,
``Neither liability nor quantum is in dispute``); read after :data:`_CONTRAST` is taken out."""
_CONTRAST = re.compile(r",\s*(?:not|rather than|and not)\b[^,;:.]*", re.IGNORECASE)
"""A trailing contrast that negates something else (``Quantum is the issue, not liability``)."""
_NEGATED_AFTER = re.compile(r"^\W*(?:\w+\s+){0,2}?(?:is|are|was|remains)?\s*(?:not|no longer|never)\b", re.IGNORECASE)
"""Right after the question: it is said not to be one (``The maximum payable is not in question``)."""


def asks_quantum(sentence: str) -> bool:
    """Whether ``sentence`` asks how much is payable (:data:`_QUANTUM`) and does not negate it.

    A negation counts in the question's own clause (the text since the last ``,;:`` before it:
    ``Neither liability nor quantum is in dispute``, ``Do not assess the quantum yet``) or right after
    it (``The maximum payable is not in question``), not further on (``How much will we pay if the bag
    is not found?``), and a trailing contrast (``, not liability``) is about something else.
    """
    text = _CONTRAST.sub("", sentence)
    for m in _QUANTUM.finditer(text):
        before = re.split(r"[,;:]", text[:m.start()])[-1]
        after = re.split(r"[,;:.?!]", text[m.end():])[0]
        if not (_NEGATED.search(before) or _NEGATED_AFTER.match(after)):
            return True
    return False
VOCABULARY_WEIGHT = 1.0
"""Fusion weight of the ``wording terms`` query (the loss vocabulary's terms the wording uses)."""
MAX_QUERY_WORDS = 200
"""Words kept of one query's text (its first ones). The local embedder reads about 180 English words
(MiniLM's 256 word pieces, its model card) and a handler's loss description is a few sentences; a
claim note of thousands of words would only slow BM25 and the embedder without adding evidence."""
MAX_SENTENCE_QUERIES = 8
"""``sentence N`` queries kept (the note's first loss sentences): each costs one ranking per retriever."""


@dataclass(frozen=True)
class Query:
    """One named query: ``name`` (``loss``, ``event``, ``condition``, ``sentence 2``, ``defined terms``),
    its text, and its weight in the fusion (1.0 is the loss query's)."""

    name: str
    text: str
    weight: float
    scope: str | None = None
    """Rank only the units of this role (:data:`longdoc.triage.routing.ROLES`); None: every unit."""
    pin: bool = False
    """Whether this query's first hit is held within the first :data:`PIN_RANK` of the fused ranking
    (the ``condition`` query when the claim tells the claimant's conduct after the loss)."""


@dataclass(frozen=True)
class Definition:
    """One defined term of a wording (as written, ``Flood``) and its definition text."""

    term: str
    text: str


def _clean(text: str) -> str:
    """``text`` without exact values (amounts, dates, percentages) and reference-like ids."""
    return " ".join(_PEOPLE.sub(" ", _ID_LIKE.sub(" ", without_values(text))).split())


def condition_like(sentence: str) -> bool:
    """Whether a note's sentence is about a condition (notice, reports, deadlines, proof, delay): a cue of
    ``_CONDITION`` after its opening reporting verb (:data:`_REPORTING_LEAD`) is taken off."""
    return bool(_CONDITION.search(_REPORTING_LEAD.sub("", sentence, count=1)))


def loss_fields(claim: Claim) -> list[tuple[str, str]]:
    """The claim form's descriptive fields ``(name, value)``: boilerplate (ids, names, amounts, dates) left out,
    a field under a fact field too (``claim_amount.value``: :func:`~longdoc.triage.claim.is_fact_field`)."""
    return [(name, value) for name, value in claim.fields.items()
            if not is_fact_field(name) and (not _BOILERPLATE_FIELD.search(name.rsplit(".", 1)[-1])
                                            or _DESCRIPTION_FIELD.search(name))]


_CLAIM_ABBREV = {"incl", "excl", "ref", "tel", "appt"}
"""Claim-form abbreviations whose dot ends no sentence, beside the common ones of
:func:`~longdoc.core.text.is_abbreviation` (``approx.``, ``e.g.``, ``no.``)."""


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (split after ``.``, ``!``, ``?``, ``;``), stripped, empty ones left out;
    a dot after an abbreviation (``incl.``, ``approx.``, ``e.g.``: :data:`_CLAIM_ABBREV`) ends none."""
    out: list[str] = []
    for piece in (p.strip() for p in _SENTENCE.split(text)):
        if not piece:
            continue
        last = out[-1].rsplit(None, 1)[-1].lstrip("(") if out else ""
        if last.endswith(".") and (is_abbreviation(last) or last.lower().rstrip(".") in _CLAIM_ABBREV):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def definitions(texts: Sequence[str]) -> list[Definition]:
    """The defined terms of a wording from its clause texts: lines ``"Term" means ...`` (also ``shall mean``,
    ``includes``, ``refers to``), each with the text up to the next definition (at most 800 characters)."""
    out: list[Definition] = []
    for text in texts:
        matches = list(_DEFINITION.finditer(text))
        for i, m in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
            term = m.group(1).strip(" \"“”'")
            if len(term) >= 3 and term.lower() not in {"this", "the", "it", "which", "that", "you", "we", "our"}:
                out.append(Definition(term, text[m.end():min(end, m.end() + 800)].strip()))
    return out


_DEFINITIONS_HEADING = re.compile(
    r"^\W*(?:(?:section|part|chapter)\s+)?(?:[\dIVXivx]+[.)]?(?:\d+[.)]?)*(?:\s*[-–—:]\s*|\s+)|(?-i:[A-Z])(?:[.)]\s*|\s*[-–—:]\s*|\s+))?"
    r"(?:general\s+|policy\s+|important\s+|standard\s+|specific\s+)?"
    r"(?:definitions?|glossary|defined\s+terms|meaning\s+of\s+(?:certain\s+)?words|words?\s+(?:and\s+phrases\s+)?"
    r"(?:with|that\s+have)\s+(?:special|specific|particular)\s+meanings?)(?:\s+(?:and|&)\s+interpretations?)?"
    r"(?:\s*[-–—:]\s*(?:standard|specific|general|special|other|additional)\s+definitions?)?\W*$",
    re.IGNORECASE)
"""A heading that is a wording's definitions section and nothing else: ``7. Definitions``, ``Section 1 – Definitions``, ``DEFINITIONS``,
``Glossary``, ``Meaning of words``, ``Words with special meanings``, ``Definitions and interpretation``,
a capital letter label before it however it is set off (``A. Defined Terms``, ``SECTION B – DEFINITIONS``,
``Section B: Definitions``, ``Section B Definitions``)
(not ``Definition of Advanced Stage Critical Illness``, which lists what is covered)."""


def is_definitions_heading(heading: str) -> bool:
    """Whether ``heading`` opens a definitions section and nothing else (:data:`_DEFINITIONS_HEADING`)."""
    return bool(_DEFINITIONS_HEADING.match(heading))


def is_definitions(text: str, heading_path: Sequence[str] = ()) -> bool:
    """True when a unit is a run of definitions: at least three ``Term means ...`` lines in ``text``,
    or any heading of its ``heading_path`` opening a definitions section (:data:`_DEFINITIONS_HEADING`),
    as in wordings that set each term beside its meaning without ``means`` (``Accident An unexpected
    ... event``) or with the meaning on the next line (``"Accident"`` / ``Shall mean ...``)."""
    return len(_DEFINITION.findall(text)) >= 3 or any(_DEFINITIONS_HEADING.match(h) for h in heading_path)


def defined_terms(text: str, defs: Sequence[Definition], rare: set[str] | None = None) -> list[str]:
    """The defined terms whose definitions best match ``text`` (BM25), sharing at least
    :data:`MIN_SHARED_WORDS` distinct words with it, one of them in ``rare`` (words few clauses of the
    wording use; None: any), not already named in it; at most :data:`MAX_TERMS`."""
    if not defs or not text.strip():
        return []
    words = set(bm25_tokens(text))
    index = BM25([bm25_tokens(d.text) for d in defs])
    out: list[str] = []
    lower = text.lower()
    for i, _ in index.rank(bm25_tokens(text)):
        d = defs[i]
        shared = words & set(bm25_tokens(d.text))
        if d.term.lower() in lower or d.term in out or len(shared) < MIN_SHARED_WORDS or (
                rare is not None and not shared & rare):
            continue
        out.append(d.term)
        if len(out) == MAX_TERMS:
            break
    return out


def rare_words(texts: Sequence[str], share: float = RARE_SHARE) -> set[str]:
    """The BM25 terms found in at most ``share`` of ``texts`` (a wording's clauses), at least in one."""
    df: dict[str, int] = {}
    for text in texts:
        for word in set(bm25_tokens(text)):
            df[word] = df.get(word, 0) + 1
    cap = max(1, int(share * len(texts)))
    return {w for w, n in df.items() if n <= cap}


def claim_queries(claim: Claim, defs: Sequence[Definition] = (), rare: set[str] | None = None,
                  wording_words: set[str] | None = None) -> list[Query]:
    """The named queries of ``claim`` (see the module docstring), best-weighted first; never empty
    (a claim with no descriptive text falls back to its whole text as the ``loss`` query); each
    query's text is cut to :data:`MAX_QUERY_WORDS` words and at most :data:`MAX_SENTENCE_QUERIES`
    ``sentence N`` queries are made. ``defs``
    and ``rare`` are the wording's definitions and rare words (:func:`defined_terms`);
    ``wording_words`` the wording's :func:`~longdoc.triage.vocabulary.lay_tokens` (None: no
    ``wording terms`` query from the loss vocabulary)."""
    fields = loss_fields(claim)
    described = [v for n, v in fields if _DESCRIPTION_FIELD.search(n)]
    note = sentences(claim.note)
    conditions = [s for s in note if condition_like(s)]
    losses = [s for s in note if not condition_like(s)]
    loss = _cap(_clean(" ".join([v for _, v in fields] + losses)) or _clean(claim.text) or claim.text)
    terms = defined_terms(loss, defs, rare)
    mapped = [t for t in (wording_terms(loss, wording_words) if wording_words else [])
              if t.lower() not in {d.lower() for d in terms}]  # a defined term found already is not repeated
    queries = [Query("loss", " ".join([loss, *terms, *mapped]), 1.0)]  # the plain words, and the wording's terms for them
    event = _clean(" ".join(described) or (losses[0] if losses else ""))
    if event and event != loss:
        queries.append(Query("event", event, 0.5))  # a part of the loss query: half its weight
    duties, duty_terms = _conduct(described + note, wording_words) if wording_words else ([], [])
    told = conditions + [s for s in duties if s not in conditions]
    if told:
        queries.append(Query("condition", " ".join(
            [_clean(_FORM_WORDS.sub(" ", " ".join(told))), *duty_terms[:MAX_WORDING_TERMS]]).strip(), 1.0,
            pin=bool(duty_terms)))
    asked = [s for s in note + [t for d in described for t in sentences(d)] if asks_quantum(s)]
    if claim.case_facts and described or asked:
        words = f"{LIMIT_WORDS} {EXCESS_WORDS}" if asked else LIMIT_WORDS
        queries.append(Query("limit", f"{_clean(' '.join(described + asked + mapped))} {words}",
                             ASKED_LIMIT_WEIGHT if asked else LIMIT_WEIGHT, "limit", pin=bool(asked)))

    if len(losses) > 1:  # the sentences made share one query's weight: together they are the loss query again
        share = round(1 / min(len(losses), MAX_SENTENCE_QUERIES), 3)  # not 1/2000 = 0.0 for a 200 KB note
        queries += [Query(f"sentence {i}", _clean(s), share)
                    for i, s in enumerate(losses[:MAX_SENTENCE_QUERIES], start=1) if _clean(s)]
    if terms:
        queries.append(Query("defined terms", " ".join(terms), 1.0))
    if mapped:  # the wording's own words for the loss's lay words (data/loss_vocabulary.json)
        queries.append(Query("wording terms", " ".join(mapped), VOCABULARY_WEIGHT))
    return [Query(q.name, q.text if q.name == "loss" else _cap(q.text), q.weight, q.scope, q.pin) for q in queries]


def _conduct(texts: Sequence[str], wording_words: set[str]) -> tuple[list[str], list[str]]:
    """The sentences of ``texts`` that tell a claimant's conduct after the loss in the condition
    entries' lay words (``told him it was my fault``), and those entries' terms that the wording
    uses (``admission``, ``promise``), each once (:func:`~longdoc.triage.vocabulary.condition_entries`)."""
    found: list[str] = []
    terms: list[str] = []
    for text in texts:
        mapped = wording_terms(text, wording_words, condition_entries())
        if mapped:
            found.append(text)
            terms += [t for t in mapped if t not in terms]
    return found, terms


def _cap(text: str) -> str:
    """``text``'s first :data:`MAX_QUERY_WORDS` words (whitespace normalised when cut)."""
    words = text.split()
    return text if len(words) <= MAX_QUERY_WORDS else " ".join(words[:MAX_QUERY_WORDS])
