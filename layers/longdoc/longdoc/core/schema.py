"""A small JSON Schema check for tool inputs: is a ``tool_use`` input complete and well typed?

A reply that stops on ``max_tokens`` may end inside a tool call; the harness runs a trailing call
only when its input satisfies the tool's ``input_schema`` (the call was complete when the output
ran out) and treats it as cut otherwise. The tools' schemas use a small subset of JSON Schema
(https://json-schema.org/understanding-json-schema/reference), checked here: ``type`` (one name
or a list; ``integer`` excludes booleans), ``required``, ``properties``,
``additionalProperties: false``, ``items``, ``minItems`` / ``maxItems``, ``enum``,
``minLength`` / ``maxLength`` and ``minimum`` / ``maximum``. Other keywords are ignored (not
failed), so a schema keyword this module does not know never rejects a call.
"""

from __future__ import annotations

from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
                                       "integer": (int,), "number": (int, float), "null": (type(None),)}


def _is(value: Any, name: str) -> bool:
    """Whether ``value`` has the JSON type ``name`` (a bool is not an integer or a number)."""
    kinds = _TYPES.get(name)
    if kinds is None:
        return True
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, kinds)


def _scalar(value: Any, schema: dict[str, Any], at: str) -> list[str]:
    """The ``enum``, string length and number range problems of one value."""
    problems: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{at}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            problems.append(f"{at}: shorter than {schema['minLength']} characters")
        if len(value) > schema.get("maxLength", len(value)):
            problems.append(f"{at}: longer than {schema['maxLength']} characters")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value < schema.get("minimum", value):
            problems.append(f"{at}: below {schema['minimum']}")
        if value > schema.get("maximum", value):
            problems.append(f"{at}: above {schema['maximum']}")
    return problems


def _array(value: list[Any], schema: dict[str, Any], at: str) -> list[str]:
    """The item count problems of an array, then each item's."""
    problems: list[str] = []
    if len(value) < schema.get("minItems", 0):
        problems.append(f"{at}: fewer than {schema['minItems']} items")
    if len(value) > schema.get("maxItems", len(value)):
        problems.append(f"{at}: more than {schema['maxItems']} items")
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            problems += schema_problems(item, items, f"{at}[{i}]")
    return problems


def _object(value: dict[str, Any], schema: dict[str, Any], at: str) -> list[str]:
    """Missing required fields, unexpected ones (``additionalProperties: false``), then each field's."""
    properties = schema.get("properties") or {}
    problems = [f"{at}: missing required field {name!r}" for name in schema.get("required") or [] if name not in value]
    for name, item in value.items():
        if name in properties:
            problems += schema_problems(item, properties[name], f"{at}.{name}")
        elif schema.get("additionalProperties") is False:
            problems.append(f"{at}: unexpected field {name!r}")
    return problems


def schema_problems(value: Any, schema: dict[str, Any], at: str = "input") -> list[str]:
    """What makes ``value`` fail ``schema`` (see the module docstring), one line per problem naming
    the path (``input.citations[0].quote: ...``); ``[]`` when it validates. A value of the wrong
    type gets that one problem only."""
    wanted = schema.get("type")
    names = wanted if isinstance(wanted, list) else [wanted] if isinstance(wanted, str) else []
    if names and not any(_is(value, n) for n in names):
        return [f"{at}: expected {' or '.join(names)}, got {type(value).__name__}"]
    problems = _scalar(value, schema, at)
    if isinstance(value, list):
        problems += _array(value, schema, at)
    if isinstance(value, dict):
        problems += _object(value, schema, at)
    return problems
