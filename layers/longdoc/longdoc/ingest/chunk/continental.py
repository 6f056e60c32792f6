"""Continental section headings: ``§ 3``, ``Art. 5``, ``Artikel 5``, ``Article 1er``, ``Cláusula Primera``.

Contracts drafted in German, French, Italian, Spanish, Portuguese or Dutch number their
sections with a keyword the English rules do not know, and their paragraphs ``(1)``,
``(2)`` (German ``Absatz``) or ``1.``, ``2.``; those paragraphs are sub-sections cited as
``§ 3(2)`` / ``Art. 5(1)``, exactly as under an English ``Article N``.

Recognised (keyword, then a number):

* ``§ 3``, ``§3``, ``§ 3a`` (German and Austrian contracts and statutes);
* ``Art.``, ``Artikel`` (German, Dutch), ``Article`` with a French ordinal suffix
  (``Article 1er``, ``Article 2e``, ``Article 3ème``) or ``Article premier``,
  ``Articolo`` (Italian), ``Artículo`` (Spanish), ``Artigo`` (Portuguese);
* ``Cláusula``/``Clausula`` (Spanish, Portuguese), ``Clausola`` (Italian), ``Klausel``.

A number is arabic (``5``, ``5a``; an ordinal indicator ``1.º``/``1º``/``1°``/``1ª`` or a
French suffix ``er``/``re``/``e``/``ème`` is part of it), roman (``IV``) or, after
``Artículo``/``Cláusula``/``Clausola``/``Artigo``/``Articolo``/``Article``, an ordinal word
(first to twelfth, and the Spanish thirteenth to twentieth): ``Primera``, ``Segunda``,
``Décima Tercera``, ``Premier``, ``Terzo``.
The section id is the keyword capitalised and the number as printed (a trailing ``.``
dropped, an ordinal word capitalised): ``§ 3``, ``Art. 5``, ``Article 1er``,
``Cláusula Primera``. Sources for the ordinal words: the Real Academia Española's
*Diccionario panhispánico de dudas* ("ordinales"), Treccani ("numerali ordinali"),
Académie française (``premier``, ``-ième``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from longdoc.core.text import roman_to_int

_ORDINAL_STEMS: dict[str, int] = {
    # Spanish and Portuguese (masculine/feminine endings -o/-a stripped), Italian, French
    "primer": 1, "primeir": 1, "prim": 1, "premier": 1, "premiere": 1,
    "segund": 2, "second": 2, "deuxieme": 2, "tercer": 3, "terceir": 3, "terz": 3, "troisieme": 3,
    "cuart": 4, "quart": 4, "quatrieme": 4, "quint": 5, "cinquieme": 5, "sext": 6, "sest": 6,
    "sixieme": 6, "septim": 7, "setim": 7, "settim": 7, "septieme": 7, "octav": 8, "oitav": 8,
    "ottav": 8, "huitieme": 8, "noven": 9, "non": 9, "neuvieme": 9, "decim": 10, "dixieme": 10,
    "undecim": 11, "decimoprimer": 11, "duodecim": 12, "decimosegund": 12, "vigesim": 20,
}
_TEENS = {"tercer": 3, "cuart": 4, "quint": 5, "sext": 6, "septim": 7, "octav": 8, "noven": 9}
"""``Decimotercera``, ``Décima Tercera``: ten plus these (Spanish, 13 to 19)."""

_KEYWORDS = (
    r"§|Art\.|ART\.|Artikel|ARTIKEL|Article|ARTICLE|Articolo|ARTICOLO|Artículo|ARTÍCULO|Articulo|ARTICULO|"
    r"Artigo|ARTIGO|Cláusula|CLÁUSULA|Clausula|CLAUSULA|Clausola|CLAUSOLA|Klausel|KLAUSEL"
)
_HEADING_RE = re.compile(
    rf"^(?P<kw>{_KEYWORDS})\s*(?P<num>\d{{1,3}}(?:\.?[º°ªo]|er|re|ème|eme|e)?(?![\w.]*\d)[a-z]?"
    r"|[IVXLC]{1,6}(?![\w])"
    r"|[A-Za-zÀ-ÿ]+(?:\s+[A-Za-zÀ-ÿ]+)?)\.?(?P<rest>(?:\s*[:.\-–—]\s*|\s+).*|)$"
)
_CITATION_REST = re.compile(
    r"^(?:Abs\.|Absatz|Satz|S\.|Nr\.|Ziff\.|Ziffer|lit\.|Buchst\.|UAbs\.|Unterabs\.|al\.|alinéa|par\.|"
    r"comma|apartado|inciso|n\.|[A-Z][A-Za-z]*[A-Z]\b\s+\S)"
)
"""What follows a number in a citation, not a title: ``§ 3 Abs. 2``, ``§ 3 BGB gilt ...``."""


@dataclass(frozen=True)
class ContinentalHeading:
    """A continental heading: ``section_id`` (``§ 3``), its number ``value`` (3) and the title after it."""

    section_id: str
    value: int
    rest: str


def _fold(word: str) -> str:
    """Lower case without accents: ``Décima`` -> ``decima``."""
    return "".join(ch for ch in unicodedata.normalize("NFD", word.lower()) if not unicodedata.combining(ch))


def ordinal_value(words: str) -> int | None:
    """The value of a Romance ordinal of one or two words (``Primera`` -> 1, ``Décima Tercera`` -> 13).

    Spanish, Portuguese and Italian ordinals lose their ``-o``/``-a`` ending before lookup
    (``primero``, ``primera``, ``primeira``, ``primo``); French ones are looked up whole.
    Returns None for anything else (a title word such as ``Vergütung``).
    """
    folded = [_fold(w) for w in words.split()]
    stems = [w[:-1] if w.endswith(("o", "a")) else w for w in folded]
    if len(stems) == 1:
        stem = stems[0]
        if stem.startswith("decimo") and stem[6:] in _TEENS:
            return 10 + _TEENS[stem[6:]]
        return _ORDINAL_STEMS.get(stem) or _ORDINAL_STEMS.get(folded[0])
    if len(stems) == 2 and stems[0] == "decim" and stems[1] in _TEENS:
        return 10 + _TEENS[stems[1]]
    return None


def _number_value(kw: str, num: str) -> int | None:
    """The value of a heading number: arabic with any suffix, roman, or an ordinal word."""
    digits = re.match(r"\d+", num)
    if digits:
        return int(digits.group())
    if re.fullmatch(r"[IVXLC]+", num):
        return roman_to_int(num)
    if kw == "§":
        return None
    return ordinal_value(num)


def _split_ordinal(kw: str, num: str, rest: str) -> tuple[str, str] | None:
    """``num`` and ``rest`` with a one-word ordinal separated from a title the regex joined to it.

    The number group may take two words (``Décima Tercera``); when only the first is an
    ordinal (``Primera Objeto``), the second goes back to the title.
    """
    words = num.split()
    if len(words) == 2 and ordinal_value(num) is None and ordinal_value(words[0]) is not None:
        return words[0], f" {words[1]}{rest}"
    return (num, rest) if _number_value(kw, num) is not None else None


def continental_heading(line: str) -> ContinentalHeading | None:
    """Read a stripped line as a continental heading; None when it is not one.

    Not a heading: a citation (``§ 3 Abs. 2``, ``§ 3 BGB findet Anwendung``, ``Art. 5 du
    contrat``: the text after the number starts in lower case or with a citation word or
    a law's abbreviation) or a number that does not read as one (``Article Premium``).
    """
    m = _HEADING_RE.match(line)
    if not m:
        return None
    kw, num = m.group("kw"), m.group("num")
    if kw.rstrip(".").lower() in ("article",) and re.fullmatch(r"\d+|[IVXLC]+", num):
        return None  # "Article 5" in English: the keyword recogniser's
    split = _split_ordinal(kw, num, m.group("rest"))
    if split is None:
        return None
    num, rest_raw = split
    rest = rest_raw.strip(" :.-–—")
    if rest and (not (rest[0].isupper() or rest[0].isdigit() or rest[0] in "\"“„«(") or _CITATION_REST.match(rest)):
        return None
    value = _number_value(kw, num)
    if value is None:
        return None
    keyword = kw if kw in ("§", "Art.") else ("Art." if kw == "ART." else kw.capitalize())
    number = num.rstrip(".") if num[:1].isdigit() else (num.upper() if roman_to_int(num) else num.title())
    return ContinentalHeading(f"{keyword} {number}", value, rest)
