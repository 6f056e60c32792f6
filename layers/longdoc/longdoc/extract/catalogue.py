"""The clause-type catalogue: what users may ask for, and how to look for it.

Users request clause types by name (``"Governing Law"``, ``"rofr / rofo / rofn"``).
The catalogue maps each name to a :class:`ClauseType` holding a plain-language
description, retrieval hints and the kind of answer expected.

The 41 default category *names* come from CUAD, the Contract Understanding Atticus
Dataset (Hendrycks, Burns, Chen and Ball, 2021, https://www.atticusprojectai.org/cuad),
licensed CC BY 4.0. The descriptions and hints in ``longdoc/data/clause_types.yaml``
are longdoc's own wording.

A user file (YAML or JSON; path usually from ``LONGDOC_CLAUSE_CATALOGUE``) can add
types or replace defaults by name; see :func:`load_catalogue`.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from longdoc.core.errors import ConfigError, UnknownClauseType

DEFAULT_RESOURCE = "clause_types.yaml"
"""File name of the packaged default catalogue inside the ``longdoc.data`` package."""

MAX_SUGGESTIONS = 3
"""How many close names an :class:`~longdoc.core.errors.UnknownClauseType` error lists."""

_SUGGESTION_CUTOFF = 0.6  # difflib similarity ratio (0..1) below which a name is not "close"


def normalise_name(name: str) -> str:
    """Return the lookup key for a clause-type name.

    Case is folded, hyphens and underscores count as spaces, runs of whitespace
    collapse to one space, and spaces around ``/`` are dropped. So ``"GOVERNING_LAW"``
    and ``"governing  law"`` both give ``"governing law"``, and ``"rofr / rofo / rofn"``
    gives ``"rofr/rofo/rofn"``.
    """
    key = re.sub(r"[-_\s]+", " ", name.casefold())
    key = re.sub(r" ?/ ?", "/", key)
    return key.strip()


class ClauseType(BaseModel):
    """One kind of clause the extractor can look for.

    Fields: ``name`` is the display name (CUAD's for the defaults); ``description``
    says what the clause is; ``hints`` are 1+ phrases that tend to appear in contract
    text for it (the defaults carry 4-12); ``answer_kind`` is ``"span"`` for a short
    value (a date, a name, a place, a duration) or ``"clause"`` for whole provisions;
    ``alternatives`` are other ways a contract may word it, unlike the hints (the offline
    baseline's ``search_chunks`` query, see :mod:`longdoc.extract.search_calls`). Unknown fields are rejected so that typos in user files surface as errors.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    hints: list[str] = Field(min_length=1)
    alternatives: list[str] = Field(default_factory=list)
    answer_kind: Literal["span", "clause"] = "clause"

    @field_validator("name")
    @classmethod
    def _name_has_letters(cls, value: str) -> str:
        if not normalise_name(value).strip(" /"):
            raise ValueError("name must contain letters or digits")
        return value

    @field_validator("hints")
    @classmethod
    def _hints_not_blank(cls, value: list[str]) -> list[str]:
        hints = [h.strip() for h in value]
        if any(not h for h in hints):
            raise ValueError("hints must not contain empty strings")
        return hints

    def query_text(self) -> str:
        """Return the text to embed or keyword-search for this clause type.

        Shape: ``"<name>. <description> Typical wording: <hint>; <hint>; ..."``, one
        line of plain text.
        """
        return f"{self.name}. {self.description} Typical wording: {'; '.join(self.hints)}"


class Catalogue:
    """An ordered set of :class:`ClauseType` looked up by normalised name.

    Names are compared with :func:`normalise_name`. Two entries whose names normalise
    to the same key are a conflict: ``ValueError`` (callers loading files turn it
    into :class:`~longdoc.core.errors.ConfigError`).
    """

    def __init__(self, clause_types: Iterable[ClauseType]):
        """Build from ``clause_types`` in order; raise ``ValueError`` on duplicate names."""
        self._by_key: dict[str, ClauseType] = {}
        for clause_type in clause_types:
            key = normalise_name(clause_type.name)
            if key in self._by_key:
                raise ValueError(
                    f"duplicate clause type {clause_type.name!r} "
                    f"(same as {self._by_key[key].name!r})"
                )
            self._by_key[key] = clause_type

    def __len__(self) -> int:
        """Return the number of clause types."""
        return len(self._by_key)

    def __iter__(self) -> Iterator[ClauseType]:
        """Iterate the clause types in catalogue order."""
        return iter(self._by_key.values())

    def __contains__(self, name: object) -> bool:
        """Return whether ``name`` (a string) resolves to a clause type."""
        return isinstance(name, str) and normalise_name(name) in self._by_key

    def names(self) -> list[str]:
        """Return the display names in catalogue order."""
        return [c.name for c in self._by_key.values()]

    def resolve(self, name: str) -> ClauseType:
        """Return the clause type called ``name`` (see :func:`normalise_name`).

        Raises :class:`~longdoc.core.errors.UnknownClauseType` when nothing matches; its
        ``suggestions`` hold up to 3 display names: names containing every word of the
        query first, then by ``difflib`` similarity.
        """
        key = normalise_name(name)
        found = self._by_key.get(key)
        if found is None:
            close = difflib.get_close_matches(
                key, list(self._by_key), n=MAX_SUGGESTIONS, cutoff=_SUGGESTION_CUTOFF
            )
            # Names that contain every word of the query ("termination", "rofr") come first.
            words = [w for w in key.replace("/", " ").split() if len(w) > 2]
            containing = [k for k in self._by_key
                          if words and all(w in k.replace("/", " ").split() or w in k for w in words)]
            ranked = list(dict.fromkeys(containing + close))[:MAX_SUGGESTIONS]
            raise UnknownClauseType(name.strip(), [self._by_key[k].name for k in ranked])
        return found

    def resolve_many(self, names: Iterable[str]) -> list[ClauseType]:
        """Resolve each of ``names`` in order, dropping repeats of the same clause type.

        Raises :class:`~longdoc.core.errors.UnknownClauseType` for the first unknown name.
        """
        result: list[ClauseType] = []
        seen: set[str] = set()
        for name in names:
            clause_type = self.resolve(name)
            key = normalise_name(clause_type.name)
            if key not in seen:
                seen.add(key)
                result.append(clause_type)
        return result

    def merged(self, overrides: Iterable[ClauseType]) -> Catalogue:
        """Return a new catalogue: ``overrides`` replace same-named entries in place,
        and new names are appended in their given order. ``self`` is unchanged.
        """
        entries = dict(self._by_key)
        for clause_type in overrides:
            entries[normalise_name(clause_type.name)] = clause_type
        return Catalogue(entries.values())


def _parse_entries(data: Any, source: str) -> list[ClauseType]:
    """Validate decoded file content into clause types.

    ``data`` is a list of entry mappings or ``{"clause_types": [...]}``. Raises
    :class:`~longdoc.core.errors.ConfigError` naming ``source``, the entry and the field.
    """
    if isinstance(data, dict):
        if set(data) != {"clause_types"}:
            raise ConfigError(
                f"{source}: expected a list of clause types or a mapping with the single "
                f"key 'clause_types', got keys {sorted(map(str, data))}"
            )
        data = data["clause_types"]
    if not isinstance(data, list):
        raise ConfigError(f"{source}: expected a list of clause types, got {type(data).__name__}")

    entries: list[ClauseType] = []
    for index, raw in enumerate(data):
        label = f"entry {index + 1}"
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            label += f" ({raw['name']!r})"
        if not isinstance(raw, dict):
            raise ConfigError(f"{source}: {label}: expected a mapping, got {type(raw).__name__}")
        try:
            entries.append(ClauseType.model_validate(raw))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'entry'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ConfigError(f"{source}: {label}: {problems}") from exc
    try:
        Catalogue(entries)  # duplicate check within this one file
    except ValueError as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    return entries


def _decode(text: str, suffix: str, source: str) -> Any:
    """Decode ``text`` as YAML (``.yaml``/``.yml``) or JSON (``.json``); ConfigError otherwise."""
    try:
        if suffix in (".yaml", ".yml"):
            return yaml.safe_load(text)
        if suffix == ".json":
            return json.loads(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{source}: invalid {suffix.lstrip('.').upper()}: {exc}") from exc
    raise ConfigError(f"{source}: unsupported file type {suffix!r}; use .yaml, .yml or .json")


@lru_cache(maxsize=1)
def _default_entries() -> tuple[ClauseType, ...]:
    """Load and validate the packaged defaults once per process."""
    source = f"longdoc.data/{DEFAULT_RESOURCE}"
    text = resources.files("longdoc.data").joinpath(DEFAULT_RESOURCE).read_text(encoding="utf-8")
    return tuple(_parse_entries(_decode(text, ".yaml", source), source))


def load_user_entries(path: Path) -> list[ClauseType]:
    """Read clause types from a user file at ``path``.

    Accepts YAML (``.yaml``/``.yml``) or JSON (``.json``) holding either a list of
    entries or ``{"clause_types": [...]}``. Raises :class:`~longdoc.core.errors.ConfigError`
    (message starts with the path) when the file is missing or unreadable, has bad
    syntax, has the wrong shape, or holds an invalid or duplicated entry.
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"{source}: clause catalogue file not found") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{source}: cannot read clause catalogue file: {exc}") from exc
    data = _decode(text, Path(path).suffix.lower(), source)
    if data is None:
        raise ConfigError(f"{source}: file is empty")
    return _parse_entries(data, source)


def load_catalogue(extra: Path | None = None) -> Catalogue:
    """Return the default catalogue (41 CUAD categories), merged with ``extra`` if given.

    User entries whose name matches a default (after :func:`normalise_name`) replace
    it in place; new names are appended. The packaged defaults are parsed once per
    process (``functools.lru_cache``); the user file is read on every call.
    Raises :class:`~longdoc.core.errors.ConfigError` for any problem with ``extra`` (see
    :func:`load_user_entries`).
    """
    defaults = Catalogue(_default_entries())
    if extra is None:
        return defaults
    return defaults.merged(load_user_entries(extra))
