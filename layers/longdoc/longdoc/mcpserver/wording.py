"""MCP wording of errors: the tool's argument names and tools where the services speak of CLI flags and commands.

The services' messages are written for the CLI (``pass --line-of-business``, ``longdoc runs resume
RUN_ID``); the CLI keeps them. An MCP client has no flags and no shell, so :func:`mcp_wording`
rewrites them for a tool's caller, and :func:`check_arguments` refuses what the SDK would let
through silently: unknown arguments (the SDK drops them) and values of the wrong JSON type (the
SDK coerces ``"3"`` and ``true`` to integers), before the tool runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from longdoc.core.errors import InvalidToolArguments
from longdoc.core.text import one_line

ID_KINDS = {"run_id": ("run", "run-<hex>, as extract returns it"),
            "summary_id": ("summary", "sum-<hex>, as summarize returns it"),
            "triage_id": ("triage", "tri-<hex>, as triage returns it")}
"""Id arguments whose form is a pattern: the thing they name and what ids look like."""

_COMMANDS = (
    (re.compile(r"`?longdoc runs resume (\S+?)`?(?=[\s;,.)]|$)"), r"the resume_run tool (run_id \1)"),
    (re.compile(r"`?longdoc runs show (\S+?)`?(?=[\s;,.)]|$)"), r"the get_run tool (run_id \1)"),
    (re.compile(r"`?longdoc clause-types`?"), "the list_clause_types tool"),
    (re.compile(r"`?longdoc ingest FILE`?"), "the ingest tool"),
    (re.compile(r"\bclaim file in the request\b"), "claim"),
)


def _argument(flag: str) -> str:
    return flag.replace("-", "_")


def mcp_wording(text: str, fields: Iterable[str]) -> str:
    """``text`` with CLI commands named as tools and ``--flag`` as the tool's argument ``flag``.

    ``pass --line-of-business`` becomes ``give the line_of_business argument`` when the tool has
    that argument; ``--focus is 900 characters`` becomes ``focus is 900 characters``. Flags the
    tool does not take are left as they are.
    """
    names = set(fields)
    for pattern, replacement in _COMMANDS:
        text = pattern.sub(replacement, text)

    def give(match: re.Match[str]) -> str:
        name = _argument(match.group(1))
        return f"give the {name} argument" if name in names else match.group(0)

    text = re.sub(r"\bpass --([a-z][a-z-]*)(?: [A-Z][A-Z-]*)?", give, text)
    return re.sub(r"--([a-z][a-z-]*)\b",
                  lambda m: _argument(m.group(1)) if _argument(m.group(1)) in names else m.group(0), text)


def errors_line(exc: ValidationError) -> str:
    """One line for arguments the model refused: ``invalid arguments: query: ...; top_k: ...``, or for an
    id not of its form ``summary ../x does not exist (ids look like ...)``, as for any unknown id."""
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else ""
        if field in ID_KINDS and error["type"] in ("string_pattern_mismatch", "string_too_long", "string_too_short"):
            kind, form = ID_KINDS[field]
            return one_line(f"{kind} {error.get('input')} does not exist (ids look like {form})", 500)
    parts = [f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {str(e['msg']).removeprefix('Value error, ')}"
             for e in exc.errors()]
    return one_line("invalid arguments: " + "; ".join(parts), 500)


def check_arguments(tool: str, model: type[BaseModel], arguments: dict[str, Any]) -> None:
    """Refuse ``arguments`` naming no field of ``model``, or whose JSON types ``model`` does not take as they are.

    Validated as JSON in strict mode (pydantic "Strict Mode": no ``"3"`` for an integer, no
    ``true`` for one either); the tool then validates them as usual. Raises
    :class:`InvalidToolArguments` for an unknown argument (naming it and the tool's arguments),
    :class:`pydantic.ValidationError` for a bad value.
    """
    fields = list(model.model_fields)
    unknown = [name for name in arguments if name not in model.model_fields]
    if unknown:
        takes = ", ".join(fields) if fields else "no arguments"
        raise InvalidToolArguments(f"invalid arguments: unknown argument{'s' if len(unknown) > 1 else ''} "
                                   f"{', '.join(repr(u) for u in unknown)} for {tool} (it takes {takes})")
    model.model_validate_json(json.dumps(arguments), strict=True)
