"""A local Step Functions engine: runs the real ASL file with Lambda tasks in-process.

moto's Step Functions backend executes ASL when ``mock_aws`` is configured with
``stepfunctions.execute_state_machine``; its Lambda tasks call moto's Lambda ``invoke``,
which we route to the real handler function in this process instead of a container.
Handler exceptions become Lambda function errors whose ``errorType`` is the exception's
class name, exactly what Step Functions' Retry and Catch match on in AWS.
"""

from __future__ import annotations

import io
import json
import os
import time
import traceback
import uuid
import zipfile
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

Handler = Callable[[dict[str, Any], Any], Any]
REGION = "us-east-1"
ACCOUNT_ROLE = "arn:aws:iam::123456789012:role/longdoc-local-extract"


@dataclass
class LocalContext:
    """The slice of the Lambda context object our handlers and Powertools read."""

    function_name: str
    memory_limit_in_mb: int = 1024
    timeout_seconds: int = 900
    aws_request_id: str = ""
    invoked_function_arn: str = ""

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_seconds
        self.aws_request_id = self.aws_request_id or str(uuid.uuid4())
        self.invoked_function_arn = self.invoked_function_arn or (
            f"arn:aws:lambda:{REGION}:123456789012:function:{self.function_name}"
        )

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the (simulated) function timeout."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))


@dataclass
class ExecutionResult:
    """A finished local execution: status, parsed output, error/cause and the full event history."""

    execution_arn: str
    status: str
    output: dict[str, Any] | None
    error: str | None
    cause: str | None
    history: list[dict[str, Any]]


def _invoke_in_process(handlers: dict[str, Handler]):
    def _invoke(self, event: Any = None) -> tuple[str, bool, str]:
        handler = handlers[self.function_name]
        payload = json.loads(event) if isinstance(event, str | bytes) else (event or {})
        try:
            result = handler(payload, LocalContext(function_name=self.function_name))
            return json.dumps(result), False, ""
        except Exception as exc:  # mirrors Lambda's function error payload
            body = {"errorType": type(exc).__name__, "errorMessage": str(exc),
                    "stackTrace": traceback.format_exception(exc)[-3:]}
            return json.dumps(body), True, ""

    return _invoke


@contextmanager
def _aws_sandbox():
    """Fake credentials for moto only while the engine runs (never touches real AWS)."""
    keys = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_PROFILE")
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": REGION})
    os.environ.pop("AWS_PROFILE", None)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_state_machine(
    definition_path: Path,
    handlers: dict[str, Handler],
    execution_input: dict[str, Any],
    *,
    name: str | None = None,
    poll_seconds: float = 0.05,
    timeout_seconds: float = 3600,
) -> ExecutionResult:
    """Execute an ASL file locally and wait for it to finish.

    ``handlers`` maps a substitution name (e.g. ``"ExtractFunctionArn"``) to the handler that
    the placeholder's Lambda function runs. Returns the result with the full history.
    Raises TimeoutError if the execution runs longer than ``timeout_seconds``.
    """
    import boto3
    from moto import mock_aws
    from moto.awslambda.models import LambdaFunction

    definition = definition_path.read_text(encoding="utf-8")
    by_function = {f"longdoc-local-{n.removesuffix('Arn').lower()}": h for n, h in handlers.items()}
    config = {"stepfunctions": {"execute_state_machine": True}}
    with _aws_sandbox(), mock_aws(config=config), mock.patch.object(
        LambdaFunction, "_invoke_lambda", _invoke_in_process(by_function)
    ):
        iam = boto3.client("iam", region_name=REGION)
        role = iam.create_role(RoleName="longdoc-local", AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                    "Principal": {"Service": "lambda.amazonaws.com"}}]}))["Role"]["Arn"]
        lam = boto3.client("lambda", region_name=REGION)
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("app.py", "def handler(event, context):\n    return event\n")
        for placeholder, function_name in zip(handlers, by_function):
            arn = lam.create_function(FunctionName=function_name, Runtime="python3.12", Role=role,
                                      Handler="app.handler", Code={"ZipFile": archive.getvalue()})["FunctionArn"]
            definition = definition.replace("${" + placeholder + "}", arn)
        sfn = boto3.client("stepfunctions", region_name=REGION)
        machine = sfn.create_state_machine(name="longdoc-local-extract", definition=definition,
                                           roleArn="arn:aws:iam::123456789012:role/longdoc-local-sfn")
        execution_arn = sfn.start_execution(stateMachineArn=machine["stateMachineArn"],
                                            name=name or str(uuid.uuid4()),
                                            input=json.dumps(execution_input))["executionArn"]
        deadline = time.monotonic() + timeout_seconds
        while True:
            described = sfn.describe_execution(executionArn=execution_arn)
            if described["status"] != "RUNNING":
                break
            if time.monotonic() > deadline:
                sfn.stop_execution(executionArn=execution_arn, error="LocalTimeout")
                raise TimeoutError(f"local execution {execution_arn} still running after {timeout_seconds} s")
            time.sleep(poll_seconds)
        history: list[dict[str, Any]] = []
        token = None
        while True:
            page = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000,
                                             **({"nextToken": token} if token else {}))
            history.extend(page["events"])
            token = page.get("nextToken")
            if not token:
                break
    output = json.loads(described["output"]) if described.get("output") else None
    return ExecutionResult(execution_arn=execution_arn, status=described["status"], output=output,
                           error=described.get("error"), cause=described.get("cause"),
                           history=json.loads(json.dumps(history, default=str)))
