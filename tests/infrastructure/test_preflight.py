"""Issue 26: ``make deploy`` refuses reserved concurrency that would leave under 100 unreserved executions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("preflight_concurrency", REPO / "scripts" / "preflight_concurrency.py")
assert _spec and _spec.loader
preflight = importlib.util.module_from_spec(_spec)
sys.modules["preflight_concurrency"] = preflight
_spec.loader.exec_module(preflight)


class LambdaStub:
    """``GetAccountSettings`` with ``unreserved`` and ``GetFunctionConcurrency`` per function name."""

    def __init__(self, unreserved: int, reserved: dict[str, int] | None = None) -> None:
        self.unreserved, self.reserved = unreserved, reserved or {}

    def get_account_settings(self) -> dict[str, Any]:
        return {"AccountLimit": {"ConcurrentExecutions": 1000, "UnreservedConcurrentExecutions": self.unreserved}}

    def get_function_concurrency(self, FunctionName: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
        value = self.reserved.get(FunctionName)
        return {} if value is None else {"ReservedConcurrentExecutions": value}


class CfnStub:
    def __init__(self, functions: list[str] | None) -> None:
        self.functions = functions

    def get_paginator(self, name: str) -> Any:
        stub = self

        class Pages:
            def paginate(self, StackName: str) -> list[dict[str, Any]]:  # noqa: N803
                if stub.functions is None:
                    raise ClientError({"Error": {"Code": "ValidationError", "Message": "does not exist"}},
                                      "ListStackResources")
                return [{"StackResourceSummaries": [{"ResourceType": "AWS::Lambda::Function",
                                                     "PhysicalResourceId": n} for n in stub.functions]}]
        return Pages()


def test_a_low_quota_account_is_refused_with_what_to_change(capsys: pytest.CaptureFixture[str]) -> None:
    # Given a new account: 10 concurrent executions, all unreserved, and no stack yet
    # When the preflight runs with the template's defaults (10 + 8 + 6 reserved)
    status = preflight.main(["--config-env", "default"], LambdaStub(10), CfnStub(None))
    # Then the deploy is refused, naming the parameters and the 100 Lambda keeps
    err = capsys.readouterr().err
    assert status == 1
    assert "ExtractReservedConcurrency=10" in err and "SummarizeReservedConcurrency=8" in err
    assert "at least 100" in err and "0 reserves nothing" in err


def test_an_account_with_room_passes_and_an_update_counts_its_own_reservations(capsys: pytest.CaptureFixture[str]) -> None:
    # Given 1,000 unreserved: the defaults leave 976
    assert preflight.main(["--config-env", "default"], LambdaStub(1000), CfnStub(None)) == 0
    assert "leaves 976 unreserved" in capsys.readouterr().out
    # Given an account with 110 unreserved whose stack already reserves 24 (an update to the same values)
    stub = LambdaStub(110, {"fn-extract": 10, "fn-summarize": 8, "fn-bulk": 6})
    # Then the update passes (its own 24 are given back first: 110 + 24 - 24 = 110)
    assert preflight.main(["--config-env", "default"], stub, CfnStub(["fn-extract", "fn-summarize", "fn-bulk"])) == 0
    # And raising a reservation past the floor is refused, while setting them to 0 passes
    assert preflight.main(["--set", "BulkReservedConcurrency=20"], stub, CfnStub(["fn-extract", "fn-summarize", "fn-bulk"])) == 1
    assert preflight.main(["--set", "ExtractReservedConcurrency=0", "--set", "SummarizeReservedConcurrency=0",
                           "--set", "BulkReservedConcurrency=0"], LambdaStub(100), CfnStub(None)) == 0


def test_make_deploy_runs_the_preflight_before_building() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = makefile[makefile.index("\ndeploy:"):].split("\n\n")[0]
    assert recipe.index("scripts/preflight_concurrency.py") < recipe.index("sam build")


def test_reserving_nothing_passes_on_a_ten_execution_account() -> None:
    # Given a new account with 10 unreserved executions and the three parameters at 0 (docs/deploy.md's advice)
    wanted = {"ExtractReservedConcurrency": 0, "SummarizeReservedConcurrency": 0, "BulkReservedConcurrency": 0}
    # When the check runs
    ok, message = preflight.check(wanted, unreserved=10, already=0)
    # Then the deploy goes on: nothing is taken from the unreserved pool
    assert ok is True and "reserving nothing" in message
    # And any reservation on that account is still refused (10 - 1 < 100)
    assert preflight.check({**wanted, "BulkReservedConcurrency": 1}, unreserved=10, already=0)[0] is False


def test_reserving_nothing_passes_through_main_on_a_low_quota_account() -> None:
    # Given the same account through the command line
    status = preflight.main(["--set", "ExtractReservedConcurrency=0", "--set", "SummarizeReservedConcurrency=0",
                             "--set", "BulkReservedConcurrency=0"], LambdaStub(10), CfnStub(None))
    # Then it exits 0
    assert status == 0
