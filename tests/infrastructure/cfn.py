"""Helpers for the template tests: parse ``template.yaml`` as data, evaluate its conditions, and
run the SAM transform (AWS::Serverless-2016-10-31) the way CloudFormation would.

Nothing here calls AWS. :func:`transform` runs ``samtranslator`` (shipped with the SAM CLI) in
the tools virtualenv, in a subprocess, because the tools pin their own dependency versions.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = REPO / "template.yaml"
TOOLS_BIN = Path(os.environ.get("LONGDOC_TOOLS_BIN", REPO / ".venv" / "tools" / "bin"))
"""Where the SAM CLI / cfn-lint virtualenv lives (``make install``); ``LONGDOC_TOOLS_BIN`` overrides."""

FUNCTIONS = ("IngestFunction", "ExtractFunction", "ApiFunction", "SummarizeFunction", "BulkFunction",
             "ReviewMonitorFunction")
NO_VALUE = object()


class _CfnLoader(yaml.SafeLoader):
    """YAML SafeLoader that turns CloudFormation short-form tags into long-form dicts.

    ``!Ref X`` -> ``{"Ref": "X"}``, ``!GetAtt A.B`` -> ``{"Fn::GetAtt": ["A", "B"]}``,
    ``!Condition C`` -> ``{"Condition": "C"}`` and any other ``!Name v`` ->
    ``{"Fn::Name": v}`` (CloudFormation template reference, intrinsic functions).
    """


def _construct_cfn_tag(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node) -> dict[str, Any]:
    """Build the long-form dict for one short-form tag (see :class:`_CfnLoader`)."""
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    if tag_suffix == "Ref":
        return {"Ref": value}
    if tag_suffix == "Condition":
        return {"Condition": value}
    if tag_suffix == "GetAtt" and isinstance(value, str):
        resource, _, attribute = value.partition(".")
        return {"Fn::GetAtt": [resource, attribute]}
    return {f"Fn::{tag_suffix}": value}


_CfnLoader.add_multi_constructor("!", _construct_cfn_tag)


def load_template(path: Path = TEMPLATE_PATH) -> dict[str, Any]:
    """Parse a CloudFormation/SAM YAML template into plain dicts (long-form intrinsics)."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass


def props(resources: dict[str, Any], logical_id: str) -> dict[str, Any]:
    """``Properties`` of one resource (KeyError when the resource is missing)."""
    return resources[logical_id]["Properties"]


def walk(node: Any) -> Iterator[Any]:
    """Yield every dict, list and scalar nested in ``node`` (depth first, node included)."""
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item)


def as_list(value: Any) -> list[Any]:
    """IAM allows a single value or a list for Action/Resource: always return a list."""
    return value if isinstance(value, list) else [value]


def sub_text(value: Any) -> str:
    """The template string of an ``Fn::Sub`` (short or list form) or a plain string."""
    if isinstance(value, str):
        return value
    sub = value["Fn::Sub"]
    return sub if isinstance(sub, str) else sub[0]


def evaluate(node: Any, pseudo: dict[str, str]) -> Any:
    """Evaluate the few intrinsics used in resource names: Ref (pseudo only), Select, Split, Sub.

    Raises ``NotImplementedError`` for anything else, so a test never silently passes
    on an expression it did not understand.
    """
    if isinstance(node, str | int):
        return node
    if isinstance(node, dict) and len(node) == 1:
        (key, arg), = node.items()
        if key == "Ref":
            return pseudo[arg]
        if key == "Fn::Split":
            return evaluate(arg[1], pseudo).split(arg[0])
        if key == "Fn::Select":
            return evaluate(arg[1], pseudo)[int(arg[0])]
        if key == "Fn::Sub":
            text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
            values = {**pseudo, **{k: evaluate(v, pseudo) for k, v in variables.items()}}
            return re.sub(r"\$\{([^}!]+)\}", lambda m: str(values[m.group(1)]), text)
    raise NotImplementedError(f"cannot evaluate {node!r}")


def condition_values(template: dict[str, Any], parameters: dict[str, Any]) -> dict[str, bool]:
    """Evaluate every entry of ``Conditions`` for the given parameter values (defaults fill the rest).

    Understands Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition, Fn::Select, Fn::Split and Ref to a parameter;
    raises ``NotImplementedError`` for anything else.
    """
    values = {name: p.get("Default") for name, p in template["Parameters"].items()} | parameters

    def value(node: Any) -> Any:
        if isinstance(node, dict) and list(node) == ["Ref"]:
            return str(values[node["Ref"]])
        if isinstance(node, dict) and list(node) == ["Fn::Select"]:
            return value(node["Fn::Select"][1])[int(node["Fn::Select"][0])]
        if isinstance(node, dict) and list(node) == ["Fn::Split"]:
            return value(node["Fn::Split"][1]).split(node["Fn::Split"][0])
        if isinstance(node, str | int):
            return str(node)
        raise NotImplementedError(f"cannot evaluate {node!r}")

    def truth(node: Any) -> bool:
        (key, arg), = node.items()
        if key == "Fn::Equals":
            return value(arg[0]) == value(arg[1])
        if key == "Fn::Not":
            return not truth(arg[0])
        if key == "Fn::And":
            return all(truth(a) for a in arg)
        if key == "Fn::Or":
            return any(truth(a) for a in arg)
        if key == "Condition":
            return truth(template["Conditions"][arg])
        raise NotImplementedError(f"cannot evaluate {node!r}")

    return {name: truth(node) for name, node in template["Conditions"].items()}


def resolve_conditions(node: Any, conditions: dict[str, bool]) -> Any:
    """``node`` with every ``Fn::If`` replaced by its chosen branch and ``AWS::NoValue`` removed."""
    if isinstance(node, dict):
        if list(node) == ["Fn::If"]:
            name, yes, no = node["Fn::If"]
            return resolve_conditions(yes if conditions[name] else no, conditions)
        if node == {"Ref": "AWS::NoValue"}:
            return NO_VALUE
        out = {k: resolve_conditions(v, conditions) for k, v in node.items()}
        return {k: v for k, v in out.items() if v is not NO_VALUE}
    if isinstance(node, list):
        return [v for v in (resolve_conditions(v, conditions) for v in node) if v is not NO_VALUE]
    return node


def deployed_resources(template: dict[str, Any], parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    """The resources CloudFormation would create for ``parameters``: conditional resources dropped,
    ``Fn::If`` branches chosen."""
    conditions = condition_values(template, parameters or {})
    kept = {k: v for k, v in template["Resources"].items() if conditions.get(v.get("Condition", ""), True)}
    return resolve_conditions(kept, conditions)


def role_statements(resources: dict[str, Any], function_id: str) -> list[dict[str, Any]]:
    """The IAM statements of the role a function runs with (its ``Role: !GetAtt X.Arn``)."""
    role = props(resources, function_id)["Role"]
    assert role == {"Fn::GetAtt": [role["Fn::GetAtt"][0], "Arn"]}, role
    statements: list[dict[str, Any]] = []
    for policy in props(resources, role["Fn::GetAtt"][0]).get("Policies", []):
        statements.extend(as_list(policy["PolicyDocument"]["Statement"]))
    return statements


def actions_by_resource(statements: list[dict[str, Any]]) -> dict[str, set[str]]:
    """``{resource text: {actions}}`` over Allow statements (``Fn::Sub`` text, ``Ref:X`` / ``GetAtt:X.Y``)."""
    grants: dict[str, set[str]] = {}
    for statement in statements:
        if statement["Effect"] != "Allow":
            continue
        for resource in as_list(statement["Resource"]):
            if isinstance(resource, dict) and "Ref" in resource:
                key = f"Ref:{resource['Ref']}"
            elif isinstance(resource, dict) and "Fn::GetAtt" in resource:
                key = "GetAtt:" + ".".join(resource["Fn::GetAtt"])
            else:
                key = sub_text(resource)
            grants.setdefault(key, set()).update(as_list(statement["Action"]))
    return grants


_TRANSFORM = r"""
import json, sys
from samtranslator.translator.transform import transform
class Loader:
    def load(self):
        return {}
request = json.load(sys.stdin)
print(json.dumps(transform(request["template"], request["parameters"], Loader())))
"""


def tools_python() -> Path:
    """The tools virtualenv's python (has ``samtranslator``); the test is skipped without it."""
    return TOOLS_BIN / "python"


def transform(template: dict[str, Any], parameters: dict[str, Any]) -> dict[str, Any]:
    """Run the SAM transform on a (long-form) template with parameter values, as CloudFormation does.

    ``CodeUri``/``ContentUri`` must already be S3 URIs (what ``sam package`` uploads). Raises
    ``subprocess.CalledProcessError`` with SAM's error text when the template is invalid.
    """
    done = subprocess.run([str(tools_python()), "-c", _TRANSFORM], input=json.dumps(
        {"template": template, "parameters": parameters}), capture_output=True, text=True, timeout=300,
        check=True, env={**os.environ, "AWS_DEFAULT_REGION": "us-east-1"})
    return json.loads(done.stdout.strip().splitlines()[-1])


def inline_statements(function_props: dict[str, Any]) -> list[dict[str, Any]]:
    """IAM statements of the inline policy documents in a SAM ``Policies`` list."""
    statements: list[dict[str, Any]] = []
    for policy in as_list(function_props.get("Policies", [])):
        if isinstance(policy, dict) and "Statement" in policy:
            statements.extend(as_list(policy["Statement"]))
    return statements
