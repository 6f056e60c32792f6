"""Errors have one list: ``longdoc.core.errors``.

Every name a state machine retries or catches on (``ErrorEquals``, in any state, inside Map
and Parallel states too) is a class of :mod:`longdoc.core.errors` subclassing
:class:`~longdoc.core.errors.LongdocError`, AWS service names (``States.*``, ``Lambda.*``,
``StepFunctions.*``) aside; a name that matches nothing would make a retrier silently dead.
And every exception class of the product (``layers/longdoc/longdoc`` and ``functions/``, read
with :mod:`ast`) is defined there, except the private ones listed in :data:`PRIVATE` with why.
"""

from __future__ import annotations

import ast
import builtins
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from longdoc.core import errors

REPO = Path(__file__).resolve().parents[2]
PRODUCT = [REPO / "layers" / "longdoc" / "longdoc", REPO / "functions"]
ERRORS_MODULE = REPO / "layers" / "longdoc" / "longdoc" / "core" / "errors.py"
AWS_PREFIXES = ("States.", "Lambda.", "StepFunctions.", "Sandbox.")  # Sandbox.Timedout: a Lambda task past its timeout

PRIVATE: dict[tuple[str, str], str] = {
    ("layers/longdoc/longdoc/adapters/voyage_rest.py", "_Transient"):
        "control flow inside the Voyage REST client: marks an attempt to retry; never leaves the adapter "
        "(it becomes EmbeddingUnavailable / RerankUnavailable after the last attempt)",
    ("layers/longdoc/longdoc/adapters/voyage_rest.py", "_Unauthorized"):
        "control flow inside the Voyage REST client: a 401 that rereads the key once; never leaves the adapter "
        "(it becomes a request error when the key is still refused)",
}
"""Exception classes allowed outside ``core/errors.py``: ``(path, class) -> why``."""


def error_names(node: Any) -> Iterator[str]:
    """Every name in every ``ErrorEquals`` of an ASL definition, at any depth (Map, Parallel)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "ErrorEquals":
                yield from value
            else:
                yield from error_names(value)
    elif isinstance(node, list):
        for item in node:
            yield from error_names(item)


def named_errors() -> set[str]:
    """The classes defined in ``longdoc.core.errors`` that subclass ``LongdocError``."""
    return {name for name, obj in vars(errors).items()
            if isinstance(obj, type) and issubclass(obj, errors.LongdocError) and obj.__module__ == errors.__name__}


def test_the_walk_finds_names_inside_map_and_parallel_states() -> None:
    # Given a definition with retriers at the top, in a Map's processor and in a Parallel branch
    definition = {"States": {
        "A": {"Type": "Task", "Retry": [{"ErrorEquals": ["One"]}]},
        "M": {"Type": "Map", "ItemProcessor": {"States": {"T": {"Catch": [{"ErrorEquals": ["Two"]}]}}}},
        "P": {"Type": "Parallel", "Branches": [{"States": {"U": {"Retry": [{"ErrorEquals": ["Three", "Four"]}]}}}]},
    }}
    # Then every name is found
    assert sorted(error_names(definition)) == ["Four", "One", "Three", "Two"]


@pytest.mark.parametrize("path", sorted((REPO / "statemachine").glob("*.asl.json")), ids=lambda p: p.name)
def test_every_error_a_state_machine_names_is_a_named_error(path: Path) -> None:
    # Given every name the state machine retries or catches on, AWS service names aside
    names = {n for n in error_names(json.loads(path.read_text(encoding="utf-8"))) if not n.startswith(AWS_PREFIXES)}
    # Then each is a class of longdoc.core.errors subclassing LongdocError
    unknown = sorted(names - named_errors())
    assert not unknown, f"{path.name} names errors that longdoc.core.errors does not define: {unknown}"


def test_the_state_machines_name_errors_of_ours() -> None:
    # Given all three machines, then together they retry on the model errors and the bulk and extract ones
    names = {n for p in (REPO / "statemachine").glob("*.asl.json")
             for n in error_names(json.loads(p.read_text(encoding="utf-8")))}
    assert {"ModelThrottled", "ModelUnavailable", "BatchNotListedYet", "CheckpointConflict"} <= names


def _base_name(node: ast.expr) -> str:
    """A base class's last name part: ``anthropic.APIError`` -> ``APIError``."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def exception_classes() -> list[tuple[str, str]]:
    """``(repo-relative path, class name)`` of every exception class defined in the product.

    A class is an exception when a base is a built-in exception, a name ending in ``Error``
    or ``Exception``, or another exception class of the product (followed to a fixpoint).
    """
    classes: list[tuple[str, str, set[str]]] = []
    for root in PRODUCT:
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    classes.append((str(path.relative_to(REPO)), node.name, {_base_name(b) for b in node.bases}))
    known = {n for n, obj in vars(builtins).items() if isinstance(obj, type) and issubclass(obj, BaseException)}
    found: set[tuple[str, str]] = set()
    grew = True
    while grew:
        grew = False
        for path, name, bases in classes:
            if (path, name) not in found and any(b in known or b.endswith(("Error", "Exception")) for b in bases):
                found.add((path, name))
                known.add(name)
                grew = True
    return sorted(found)


def test_the_class_walk_sees_the_errors_module() -> None:
    # Given the walk, then it finds the classes of core/errors.py (so an empty result cannot pass)
    here = {name for path, name in exception_classes() if path == str(ERRORS_MODULE.relative_to(REPO))}
    assert named_errors() | {"LongdocError"} <= here


def test_every_exception_class_of_the_product_is_in_core_errors() -> None:
    # Given every exception class defined in the product
    outside = [(p, n) for p, n in exception_classes() if p != str(ERRORS_MODULE.relative_to(REPO))]
    # Then each one outside core/errors.py is a listed private one
    assert sorted(set(outside) - set(PRIVATE)) == [], "define these in longdoc/core/errors.py"
    # And every listed private one still exists (the list stays accurate)
    assert sorted(set(PRIVATE) - set(outside)) == []


NOT_OURS = {"ExecutionAlreadyExists": "the local stand-in of Step Functions' own error: on AWS botocore raises it, "
                                      "which the API answers 500, so the local one must not be a LongdocError (a 400)"}
"""Classes of ``core/errors.py`` that deliberately do not subclass ``LongdocError``: ``name -> why``."""


def test_every_class_of_core_errors_is_a_longdoc_error() -> None:
    # Given the classes core/errors.py defines, then each subclasses LongdocError (one base for all),
    # but the stand-ins of AWS's own errors
    defined = {n for n, obj in vars(errors).items() if isinstance(obj, type) and obj.__module__ == errors.__name__}
    assert len(defined) > 30 and defined - set(NOT_OURS) == named_errors()
    assert all(issubclass(getattr(errors, name), Exception) for name in NOT_OURS)
