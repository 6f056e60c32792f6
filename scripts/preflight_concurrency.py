"""Deploy preflight (issue 26): refuse a deploy whose reserved concurrency would leave the account
fewer than 100 unreserved Lambda executions.

Lambda keeps at least 100 concurrent executions unreserved for the functions without a reservation:
"Lambda requires at least 100 unreserved concurrency" and a reservation that would go below it is
refused (https://docs.aws.amazon.com/lambda/latest/dg/configuring-concurrency.html, "Configuring
reserved concurrency"; the account figures come from ``GetAccountSettings``:
https://docs.aws.amazon.com/lambda/latest/api/API_GetAccountSettings.html). Without this check
CloudFormation fails midway (``ExtractReservedConcurrency`` 10 on an account whose quota is the
new-account default of 10) and rolls the stack back.

The stack reserves ``ExtractReservedConcurrency`` + ``SummarizeReservedConcurrency`` +
``BulkReservedConcurrency`` (the template's defaults unless overridden in ``samconfig.toml`` or
``--set``). What this stack's functions already reserve (an update) is counted as free again.
The deploy goes on when the wanted total is 0 (nothing is reserved, so nothing is taken from the
unreserved pool, whatever the account's quota: the low-quota setting docs/deploy.md recommends) or
when ``UnreservedConcurrentExecutions + already_reserved - wanted >= 100`` (the floor applies to a
reservation: "at least 100 unreserved" in the page above); else exit status 1 with a message saying which parameters to lower (0 reserves nothing) or to
raise the quota.

Usage (``make deploy`` runs it first)::

    python scripts/preflight_concurrency.py --config-env default [--set ExtractReservedConcurrency=4]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from deploy_revision import overrides_from_samconfig  # noqa: E402 - the script's sibling

MIN_UNRESERVED = 100
"""Unreserved concurrency Lambda keeps per account and Region (Lambda developer guide)."""
RESERVED_PARAMETERS = {"ExtractReservedConcurrency": "ExtractFunction",
                       "SummarizeReservedConcurrency": "SummarizeFunction",
                       "BulkReservedConcurrency": "BulkFunction"}
"""Each reserved-concurrency parameter of template.yaml and the function it reserves for."""


def _defaults(template: Path) -> dict[str, int]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    params = yaml.load(template.read_text(encoding="utf-8"), Loader=Loader)["Parameters"]  # noqa: S506 - SafeLoader subclass
    return {name: int(params[name]["Default"]) for name in RESERVED_PARAMETERS}


def wanted_reservations(template: Path, overrides: Sequence[str]) -> dict[str, int]:
    """The reserved concurrency per parameter as the deploy would set it: defaults, then ``Key=Value`` overrides."""
    values = _defaults(template)
    for item in overrides:
        key, _, value = item.partition("=")
        if key in values:
            values[key] = int(value)
    return values


def current_reservations(lambda_client: Any, cfn_client: Any, stack_name: str) -> int:
    """What this stack's functions reserve now (0 for a stack not yet created)."""
    from botocore.exceptions import ClientError

    try:
        pages = cfn_client.get_paginator("list_stack_resources").paginate(StackName=stack_name)
        names = [r["PhysicalResourceId"] for page in pages for r in page["StackResourceSummaries"]
                 if r["ResourceType"] == "AWS::Lambda::Function" and r.get("PhysicalResourceId")]
    except ClientError:
        return 0
    total = 0
    for name in names:
        total += int(lambda_client.get_function_concurrency(FunctionName=name).get("ReservedConcurrentExecutions") or 0)
    return total


def check(wanted: dict[str, int], unreserved: int, already: int) -> tuple[bool, str]:
    """``(ok, message)``: ok when nothing is reserved (``sum(wanted) == 0``) or when
    ``unreserved + already - sum(wanted)`` stays at or above :data:`MIN_UNRESERVED`.

    A zero total reserves nothing, so it takes nothing from the unreserved pool and cannot break
    Lambda's floor of "at least 100 unreserved concurrency", which only refuses reservations
    (https://docs.aws.amazon.com/lambda/latest/dg/configuring-concurrency.html): it passes even on
    a 10-execution account. Counts are concurrent executions.
    """
    total = sum(wanted.values())
    left = unreserved + already - total
    parts = ", ".join(f"{k}={v}" for k, v in wanted.items())
    if total == 0:
        return True, (f"preflight: reserving nothing ({parts}): the {unreserved} unreserved Lambda executions "
                      "stay as they are")
    if left >= MIN_UNRESERVED:
        return True, f"preflight: reserving {total} ({parts}) leaves {left} unreserved Lambda executions (>= {MIN_UNRESERVED})"
    return False, (f"preflight: refusing to deploy: reserving {total} ({parts}) would leave {left} unreserved Lambda "
                   f"executions, and Lambda requires at least {MIN_UNRESERVED} (the account has {unreserved} "
                   f"unreserved now, this stack reserves {already}). Lower these parameters (0 reserves nothing) "
                   "with --parameter-overrides or samconfig.toml, or ask AWS Support to raise the "
                   "'Concurrent executions' quota (Service Quotas, AWS Lambda).")


def main(argv: Sequence[str] | None = None, lambda_client: Any = None, cfn_client: Any = None) -> int:
    """Run the check; exit status 0 (go on) or 1 (refused, message on stderr)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config-env", default="default")
    parser.add_argument("--samconfig", type=Path, default=REPO / "samconfig.toml")
    parser.add_argument("--template", type=Path, default=REPO / "template.yaml")
    parser.add_argument("--stack-name", default=None, help="default: the samconfig environment's stack_name")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    if lambda_client is None or cfn_client is None:
        import boto3

        lambda_client, cfn_client = boto3.client("lambda"), boto3.client("cloudformation")
    stack = args.stack_name or _stack_name(args.samconfig, args.config_env)
    wanted = wanted_reservations(args.template, [*overrides_from_samconfig(args.samconfig, args.config_env), *args.set])
    unreserved = int(lambda_client.get_account_settings()["AccountLimit"]["UnreservedConcurrentExecutions"])
    ok, message = check(wanted, unreserved, current_reservations(lambda_client, cfn_client, stack))
    print(message, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


def _stack_name(samconfig: Path, config_env: str) -> str:
    import tomllib

    config = tomllib.loads(samconfig.read_text(encoding="utf-8")) if samconfig.is_file() else {}
    return str(config.get(config_env, {}).get("global", {}).get("parameters", {}).get("stack_name", "longdoc-dev"))


if __name__ == "__main__":
    sys.exit(main())
