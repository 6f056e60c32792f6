"""Claim files: text, or JSON with the claim form's fields and the adjuster's note.

JSON: an object whose ``loss_date``, ``line_of_business``, ``adjuster_note`` (or ``note``)
and ``claim_id`` keys are read by name; every other key is a claim-form field (nested
objects are flattened as ``a.b``; blank values are left out). Text: the whole file is the claim
as sent to the model; ``Loss date:`` / ``Date of loss:`` and ``Line of business:`` lines are read
when present, and every other short label line (``Policy number: LP234F32``, ``Claimant: Jane Doe``:
a label of at most four words, a colon, a value of at most :data:`MAX_LABEL_VALUE_WORDS` words) is a
claim-form field named by its label in snake case (``policy_number``), as in a JSON claim; a label line
with a longer value, or labelled ``Note:`` / ``Adjuster's note:``, gives its value to the note. The claim text sent to the model is, for JSON, the
form's fields (``name: value``, one a line) and then the note, as data. A claim needs descriptive
text: a note, or a form field that is not an amount, date, number or id (below), holding a letter
(a blank or digits-only description is not one). A JSON claim file must hold an object (an array is
refused). Files are UTF-8, or UTF-16 / UTF-32 with a byte-order mark (:func:`decode_text`).

CASE_FACTS (exact values, never paraphrased): the form fields whose name says amount, date,
number or id (``policy_number``, ``claim_amount``), copied byte for byte, then every exact
value of the text (:func:`longdoc.core.values.exact_values`: amounts, percentages, dates).
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass, field
from typing import Any

from longdoc.core.errors import TriageError
from longdoc.core.values import exact_values, without_values

_FACT_NAME = re.compile(r"amount|date|number|_no$|^no$|_id$|^id$|limit|deductible|sum(?!mar)", re.IGNORECASE)
_LOSS_LINE = re.compile(r"^\s*(?:loss date|date of loss)\s*[:=][ \t]*(\S[^\n]*?)[ \t]*$", re.IGNORECASE | re.MULTILINE)
_LOB_LINE = re.compile(r"^\s*line of business\s*[:=]\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_LABEL_LINE = re.compile(r"^[ \t]*([A-Za-z][A-Za-z'’/()&.#-]*(?:[ \t]+[A-Za-z][A-Za-z'’/()&.#-]*){0,3})[ \t]*:"
                         r"(?:[ \t]+(.*?))?[ \t]*$")
"""A text claim's label line: ``Label: value`` (a label of one to four words, abbreviations such as
``Policy No.:`` or ``Ref #:`` included; the value may be empty)."""
MAX_LABEL_VALUE_WORDS = 8
"""Longest value (words) of a text claim's label line read as a form field; a longer one is prose (the note)."""
_NOTE_LABELS = {"note", "notes", "adjuster_note", "adjuster_s_note", "adjusters_note", "adjuster_notes"}
"""Labels whose value is the note, whatever its length (JSON's ``adjuster_note`` / ``note``)."""
_LETTER = re.compile(r"[^\W\d_]")
_CONTACT_FIELD = re.compile(r"(?:^|_)(?:name|claimant|address|phone|mobile|telephone|tel|email|e_mail|contact|broker|agent)"
                            r"(?:_|$)", re.IGNORECASE)
"""Claim-form fields that say who to reach (a name, a phone number), never what happened."""
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))
"""Byte-order marks read as UTF-32 / UTF-16 (UTF-32's first: its little-endian BOM starts with UTF-16's)."""
MAX_CLAIM_BYTES = 200_000
"""Largest claim file accepted (bytes): a claim form plus a note is a few kilobytes."""


@dataclass
class Claim:
    """One claim: the form's fields, the adjuster's note, and what was read from them.

    ``loss_date`` / ``line_of_business`` are as found in the claim (``None`` when absent;
    flags override them). ``case_facts`` maps a name to an exact value, verbatim.
    """

    fields: dict[str, str]
    note: str
    loss_date: str | None = None
    line_of_business: str | None = None
    claim_id: str | None = None
    case_facts: dict[str, str] = field(default_factory=dict)
    raw: str = ""
    """A text claim's whole text (stripped); empty for a JSON claim."""

    @property
    def text(self) -> str:
        """The claim as sent to the model and used as the retrieval query: a text claim's whole text,
        else the fields, then the note."""
        if self.raw:
            return self.raw
        lines = [f"{name}: {value}" for name, value in self.fields.items()]
        if self.note:
            lines += ["", "Adjuster's note:", self.note] if lines else [self.note]
        return "\n".join(lines).strip()


def _flatten(values: dict[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name + "."))
        elif isinstance(value, list) and any(isinstance(v, dict) for v in value):  # witnesses: [{name, phone}]
            out.update(_flatten({str(i): v for i, v in enumerate(value)}, name + "."))
        elif value is not None and not (isinstance(value, str) and not value.strip()):
            out[name] = (value if isinstance(value, str) else
                         ", ".join(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else
                         json.dumps(value, ensure_ascii=False))  # ["bicycle", "stolen"] reads "bicycle, stolen"
    return out


def is_fact_field(name: str) -> bool:
    """Whether the flattened field ``name`` (``claim_amount``, ``claim_amount.value``, ``dates.loss``)
    holds an exact value (:data:`_FACT_NAME`: an amount, a date, a number or id, a limit, a deductible,
    a sum) by any part of its dotted path: ``{"claim_amount": {"value": "5000"}}`` is an amount as
    ``{"claim_amount": "5000"}`` is, a CASE_FACT and never words of the loss."""
    return any(_FACT_NAME.search(part) for part in name.split("."))


def _facts(fields: dict[str, str], text: str, named: dict[str, str] | None = None) -> dict[str, str]:
    """CASE_FACTS: ``named`` (a text claim's ``loss_date`` line), the fact fields, then the text's other
    exact values as ``value_1``, ``value_2``, ... (a value already named is not repeated)."""
    facts = dict(named or {})
    facts.update({name: value for name, value in fields.items() if is_fact_field(name)})
    known = set(facts.values())
    for i, value in enumerate(v for v in exact_values(text) if v not in known):
        facts[f"value_{i + 1}"] = value
    return facts


_SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone UTF-16 surrogate: JSON's ``\\ud800`` escape decodes to one, and it is no character (no UTF-8
encoding, RFC 3629 section 3), so the embedder and any store would fail on it later."""


def surrogate_field(values: Any, path: str = "") -> str | None:
    """The dotted path of the first key or string of ``values`` (a parsed JSON value) holding a lone
    surrogate (:data:`_SURROGATE`), ``"(text)"`` for a bare string; None when there is none."""
    if isinstance(values, str):
        return path or "(text)" if _SURROGATE.search(values) else None
    if isinstance(values, dict):
        for key, value in values.items():
            here = f"{path}.{key}" if path else str(key)
            if _SURROGATE.search(str(key)):
                return here.encode("utf-8", "backslashreplace").decode("ascii")
            found = surrogate_field(value, here)
            if found:
                return found
    if isinstance(values, list):
        for n, value in enumerate(values):
            found = surrogate_field(value, f"{path}[{n}]")
            if found:
                return found
    return None


def claim_from_json(values: dict[str, Any]) -> Claim:
    """A claim from a parsed JSON object (see the module docstring). Raises :class:`TriageError` when it
    is empty, has no descriptive text, or a field holds a lone surrogate (a ``\\ud800`` escape: not
    a character)."""
    bad = surrogate_field(values)
    if bad:
        raise TriageError(f"field {bad} holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape), which is not a "
                          "character: send the text as UTF-8", "claim")
    data = dict(values)
    loss = data.pop("loss_date", None)
    lob = data.pop("line_of_business", None)
    note = data.pop("adjuster_note", None) or data.pop("note", None) or ""
    claim_id = data.pop("claim_id", None)
    form = data.pop("claim_form", None)
    fields = _flatten(form) if isinstance(form, dict) else ({"claim_form": str(form)} if form else {})
    fields.update(_flatten(data))
    claim = Claim(fields, _note_text(note), str(loss) if loss else None, str(lob) if lob else None,
                  str(claim_id) if claim_id is not None else None)
    if not claim.text:
        raise TriageError("the claim has no text: give claim-form fields or an adjuster_note", "claim")
    if not _described(claim):
        raise TriageError(f"the claim has no descriptive text, only {', '.join(fields) or 'a note without words'}: "
                          "give a description "
                          "of the loss (a claim-form field) or an adjuster_note", "claim")
    claim.case_facts = _facts(claim.fields, claim.text)
    return claim


def _note_text(note: Any) -> str:
    """The adjuster's note as text: a string as it is; a list or an object as its texts one after the
    other, each a sentence (``["hose burst", "kitchen flooded"]`` -> ``hose burst. kitchen flooded.``,
    not a Python repr), an object's contact entries (``witnesses: [{name, phone}]``:
    :data:`_CONTACT_FIELD`) left out; a number as written; stripped."""
    if isinstance(note, str):
        return note.strip()
    return " ".join(t.rstrip(".") + "." for t in _note_texts(note)).strip()


def _note_texts(value: Any, key: str = "") -> list[str]:
    """The non-blank texts (and numbers) of a nested note, in order, without contact entries."""
    if key and _CONTACT_FIELD.search(key):
        return []
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in _note_texts(v, str(k))]
    if isinstance(value, list):
        return [t for v in value for t in _note_texts(v)]
    text = value.strip() if isinstance(value, str) else "" if value is None or isinstance(value, bool) else str(value)
    return [text] if text else []


def _described(claim: Claim) -> bool:
    """True when the note, or a form field that is neither a fact field nor a contact field (a name, a
    phone number: :data:`_CONTACT_FIELD`), holds a letter outside its exact values (a note of dates only,
    ``2024-03-03 20 March 2024``, describes nothing: :func:`~longdoc.core.values.exact_values`)."""
    return _has_words(claim.note) or any(
        _has_words(value) for name, value in claim.fields.items()
        if not is_fact_field(name) and not _CONTACT_FIELD.search(name.rsplit(".", 1)[-1]))


def _has_words(text: str) -> bool:
    """Whether ``text`` holds a letter once its exact values (amounts, dates, percentages) are taken out."""
    return bool(_LETTER.search(text)) and bool(_LETTER.search(without_values(text)))


_CLAIM_ID_LABELS = ("claim_id", "claim_number", "claim_no", "claim_ref", "claim_reference")
"""Label keys of a text claim whose value is the claim's id (``Claim number: CL-2024-0091``), first found wins;
the field also stays a form field (and a CASE_FACTS value)."""


def _label_key(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def claim_from_text(text: str) -> Claim:
    """A claim from plain text (module docstring): ``Loss date:`` and ``Line of business:`` lines read
    when present, short label lines as form fields (``Policy number: X`` -> ``policy_number``), the rest
    the note; :attr:`Claim.text` is the whole text. CASE_FACTS as for JSON: the fact fields, then the
    text's exact values.

    Raises :class:`TriageError` when nothing but those lines (or blanks) is there, or no field or note
    line describes the loss (only ids, amounts, dates or digits).
    """
    loss = _LOSS_LINE.search(text)
    lob = _LOB_LINE.search(text)
    rest = _LOB_LINE.sub("", _LOSS_LINE.sub("", text))
    if not rest.strip():
        raise TriageError("the claim has no descriptive text, only its loss date / line of business lines", "claim")
    fields: dict[str, str] = {}
    note: list[str] = []
    for line in rest.splitlines():
        label = _LABEL_LINE.match(line)
        if label is None:
            note.append(line)
        elif (len((value := label.group(2) or "").split()) > MAX_LABEL_VALUE_WORDS
              or _label_key(label.group(1)) in _NOTE_LABELS):
            note.append(value)
        elif value:
            key = _label_key(label.group(1))
            fields[key if key not in fields else f"{key}_{sum(k.startswith(key) for k in fields) + 1}"] = value
    claim_id = next((fields[k] for k in _CLAIM_ID_LABELS if k in fields), None)
    claim = Claim(fields, "\n".join(note).strip(), loss.group(1) if loss else None, lob.group(1) if lob else None,
                  claim_id, raw=text.strip())
    if not _described(claim):
        raise TriageError("the claim has no descriptive text, only "
                          + (", ".join(fields) if fields else "label lines, digits and punctuation")
                          + ": give a description of the loss", "claim")
    claim.case_facts = _facts(claim.fields, claim.text, {"loss_date": claim.loss_date} if claim.loss_date else None)
    return claim


def decode_text(data: bytes, name: str, what: str = "claim file") -> str:
    """The text of a file's bytes: UTF-8 (a BOM dropped), or UTF-16 / UTF-32 when it starts with their BOM
    (what Windows editors save as "Unicode"). Raises :class:`TriageError` naming ``what`` and ``name``
    (its field: the first word of ``what``, ``claim`` or ``examples``) for NUL bytes in the text (binary)
    or bytes that are not valid in that encoding."""
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), "utf-8-sig")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        raise TriageError(f"{what} {name} is binary or not UTF-8 text (nor UTF-16 / UTF-32 with a byte-order mark)",
                          what.split()[0]) from None
    if "\x00" in text:
        raise TriageError(f"{what} {name} is binary, not text" + (" or JSON" if what == "claim file" else ""),
                          what.split()[0])
    return text.removeprefix("\ufeff")


def read_claim(data: bytes, name: str) -> Claim:
    """Parse a claim file's bytes (``name`` is used in errors): JSON when it starts with ``{`` or the name
    ends in ``.json`` (so a ``.json`` file holding a JSON string or plain text is refused), else text.

    The bytes are decoded by :func:`decode_text` (UTF-8, or UTF-16 / UTF-32 with a BOM). Raises
    :class:`TriageError` in one line naming the file for an empty one, a binary one, one over
    :data:`MAX_CLAIM_BYTES`, JSON that is invalid or not an object (a whole JSON array too), or a claim without descriptive
    text (:func:`claim_from_json`, :func:`claim_from_text`).
    """
    if len(data) > MAX_CLAIM_BYTES:
        raise TriageError(f"claim file {name} is {len(data)} bytes, over the {MAX_CLAIM_BYTES}-byte cap", "claim")
    text = decode_text(data, name)
    if not text.strip():
        raise TriageError(f"claim file {name} is empty", "claim")
    try:
        if text.lstrip().startswith("{") or _is_json_array(text) or name.lower().endswith(".json"):
            return claim_from_json(_json_object(text, name))
        return claim_from_text(text)
    except TriageError as exc:
        if str(exc).startswith(f"claim file {name} "):
            raise
        raise TriageError(f"claim file {name}: {exc}", "claim") from None


def _is_json_array(text: str) -> bool:
    """True when ``text`` is a whole JSON array (``[1, 2]``), not text that starts with a bracket."""
    if not text.lstrip().startswith("["):
        return False
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _json_object(text: str, name: str) -> dict[str, Any]:
    try:
        values = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TriageError(f"claim file {name} is not valid JSON ({exc})", "claim") from None
    if not isinstance(values, dict):
        raise TriageError(f"claim file {name} must hold a JSON object", "claim")
    return values
