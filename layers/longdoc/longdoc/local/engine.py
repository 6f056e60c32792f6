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
import re
import time
import traceback
import uuid
import zipfile
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

Handler = Callable[[dict[str, Any], Any], Any]
REGION = "us-east-1"
LOCAL_PARTITION = "aws"
"""The partition substituted for ``${Partition}`` in the ASL files locally (moto serves the aws partition)."""
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
    executions: list[str] = field(default_factory=list)


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


def _model_before_sandbox() -> None:
    """Compose the Bedrock model before :func:`_aws_sandbox` replaces the AWS environment (issue 28).

    With ``LONGDOC_MODEL_PROVIDER=bedrock`` the model's region and credentials are resolved now,
    from the real environment and profile, and passed to its client explicitly
    (:func:`longdoc.wiring.model`, cached for the process), so the handlers that run inside the
    sandbox call Bedrock with them, never with moto's fake keys. Raises ConfigError (a Bedrock
    region, credential or model-id problem) before anything runs.
    """
    if os.environ.get("LONGDOC_MODEL_PROVIDER") == "bedrock":
        from longdoc import wiring

        wiring.model()


@contextmanager
def _aws_sandbox():
    """Fake credentials and ``us-east-1`` for moto's stand-ins only while the engine runs (never touches real AWS).

    Covers the local stand-ins alone: the model client was built before it with its own
    region and credentials (:func:`_model_before_sandbox`)."""
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


class LocalStepFunctions:
    """The state machine of an ASL file running in moto, its Lambda tasks in-process.

    Use as a context manager. Inside an already active ``mock_aws`` (tests with moto
    DynamoDB) it joins that mock; otherwise it opens its own with fake credentials.
    The machine is named ``longdoc-local-<definition file's stem>-<8 hex>`` (``summarize`` for
    ``summarize.asl.json``), so an execution ARN names its workflow. ``start`` starts an
    execution (``start_execution`` is the same as the :class:`~longdoc.core.ports.ExecutionStarter` port, which
    :func:`longdoc.extract.runs.start_extraction` uses); ``wait`` polls it to the end and follows continue-as-new
    (a ``ContinuedAsNew`` success whose output names the next execution); ``redrive``
    emulates Step Functions' redrive, which moto does not implement (see :meth:`redrive`).
    """

    def __init__(self, definition_path: Path, handlers: dict[str, Handler], *, poll_seconds: float = 0.05):
        self.definition_path = definition_path
        self.machine_name = re.sub(r"[^A-Za-z0-9-]", "-", definition_path.name.split(".")[0]) or "machine"
        self.handlers = handlers
        self.poll_seconds = poll_seconds
        self._stack: list[Any] = []
        self._redrives: dict[str, int] = {}

    def __enter__(self) -> LocalStepFunctions:
        import boto3
        from moto import mock_aws
        from moto.awslambda.models import LambdaFunction
        from moto.core.config import default_user_config

        handlers = {**self.handlers, "LocalStartExecutionArn": self._start_execution_task}
        by_function = {f"longdoc-local-{n.removesuffix('Arn').lower()}": h for n, h in handlers.items()}
        _model_before_sandbox()
        sandbox = _aws_sandbox()
        sandbox.__enter__()
        self._stack.append(sandbox)
        mock = mock_aws(config={"stepfunctions": {"execute_state_machine": True}})
        mock.start(reset=False)
        self._stack.append(mock)
        default_user_config.setdefault("stepfunctions", {})["execute_state_machine"] = True
        patch = mock_patch_invoke(LambdaFunction, by_function)
        patch.start()
        self._stack.append(patch)
        suffix = uuid.uuid4().hex[:8]
        iam = boto3.client("iam", region_name=REGION)
        role = iam.create_role(RoleName=f"longdoc-local-{suffix}", AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                    "Principal": {"Service": "lambda.amazonaws.com"}}]}))["Role"]["Arn"]
        lam = boto3.client("lambda", region_name=REGION)
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("app.py", "def handler(event, context):\n    return event\n")
        # ${Partition} is the template's AWS::Partition substitution; moto runs in the aws partition
        text = self.definition_path.read_text(encoding="utf-8").replace("${Partition}", LOCAL_PARTITION)
        definition = json.dumps(_local_start_execution(json.loads(text)))
        for placeholder, function_name in zip(handlers, by_function, strict=True):
            try:
                arn = lam.create_function(FunctionName=function_name, Runtime="python3.12", Role=role,
                                          Handler="app.handler", Code={"ZipFile": archive.getvalue()})["FunctionArn"]
            except lam.exceptions.ResourceConflictException:
                arn = lam.get_function(FunctionName=function_name)["Configuration"]["FunctionArn"]
            definition = definition.replace("${" + placeholder + "}", arn)
        self.definition = definition
        self.sfn = boto3.client("stepfunctions", region_name=REGION)
        self.machine_arn = self.sfn.create_state_machine(
            name=f"longdoc-local-{self.machine_name}-{suffix}", definition=definition,
            roleArn="arn:aws:iam::123456789012:role/longdoc-local-sfn")["stateMachineArn"]
        return self

    def _start_execution_task(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        """In-process stand-in for the ``states:startExecution`` integration (request-response)."""
        response = self.sfn.start_execution(stateMachineArn=event["StateMachineArn"], name=event["Name"],
                                            input=json.dumps(event.get("Input") or {}))
        return {"ExecutionArn": response["executionArn"], "StartDate": str(response["startDate"])}

    def __exit__(self, *exc: object) -> None:
        while self._stack:
            item = self._stack.pop()
            if hasattr(item, "__exit__") and not hasattr(item, "stop"):
                item.__exit__(None, None, None)
            else:
                item.stop()

    def start(self, execution_input: dict[str, Any], name: str | None = None, *, machine_arn: str | None = None) -> str:
        """Start an execution; returns its ARN."""
        return self.sfn.start_execution(stateMachineArn=machine_arn or self.machine_arn, name=name or str(uuid.uuid4()),
                                        input=json.dumps(execution_input))["executionArn"]

    def start_execution(self, name: str, execution_input: dict[str, Any]) -> str:
        """Start an execution of this state machine (the :class:`~longdoc.core.ports.ExecutionStarter` port).

        ``name`` is the execution name, ``execution_input`` its JSON-serialisable input; returns
        the execution's ARN. Only inside the ``with`` block (the engine must be running).
        """
        return self.start(execution_input, name)

    def _wait_one(self, execution_arn: str, deadline: float) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        while True:
            described = self.sfn.describe_execution(executionArn=execution_arn)
            if described["status"] != "RUNNING":
                break
            if time.monotonic() > deadline:
                self.sfn.stop_execution(executionArn=execution_arn, error="LocalTimeout")
                raise TimeoutError(f"local execution {execution_arn} still running")
            time.sleep(self.poll_seconds)
        return described, self.history(execution_arn)

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        """The execution's events so far (every page), as JSON-ready dicts (timestamps as strings)."""
        history: list[dict[str, Any]] = []
        token = None
        while True:
            page = self.sfn.get_execution_history(executionArn=execution_arn, maxResults=1000,
                                                  **({"nextToken": token} if token else {}))
            history.extend(page["events"])
            token = page.get("nextToken")
            if not token:
                break
        return json.loads(json.dumps(history, default=str))

    def executions(self) -> list[dict[str, Any]]:
        """Every execution of this engine's state machine, oldest first (``executionArn``, ``name``, ``status``)."""
        found = self.sfn.list_executions(stateMachineArn=self.machine_arn)["executions"]
        return sorted(found, key=lambda e: str(e["startDate"]))

    def wait(self, execution_arn: str, timeout_seconds: float = 3600) -> ExecutionResult:
        """Wait for an execution and every execution it continued as; returns the chain's result.

        ``status``/``output``/``error``/``cause`` are the last execution's; ``history`` is
        the concatenation; ``executions`` lists every ARN in order.
        """
        deadline = time.monotonic() + timeout_seconds
        arns: list[str] = []
        history: list[dict[str, Any]] = []
        while True:
            described, events = self._wait_one(execution_arn, deadline)
            arns.append(execution_arn)
            history.extend(events)
            output = json.loads(described["output"]) if described.get("output") else None
            nxt = (output or {}).get("continued_as", {}).get("execution_arn") if described["status"] == "SUCCEEDED" else None
            if not nxt:
                return ExecutionResult(execution_arn=execution_arn, status=described["status"], output=output,
                                       error=described.get("error"), cause=described.get("cause"),
                                       history=history, executions=arns)
            execution_arn = nxt

    def redrive(self, execution_arn: str) -> str:
        """Emulate ``RedriveExecution`` for a FAILED execution; returns the new execution's ARN.

        AWS re-runs the state the execution failed in, with that state's input, in the same
        execution (https://docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html).
        moto has no redrive, so this starts a new execution (name ``<name>-redrive-<n>``) of
        a copy of the definition whose ``StartAt`` is that state, with that state's input.
        What the handlers observe is the same: the failed state runs again with the same
        input and a new ``$$.State.EnteredTime``. Raises ValueError if it did not fail.
        """
        described = self.sfn.describe_execution(executionArn=execution_arn)
        if described["status"] != "FAILED":
            raise ValueError(f"{execution_arn} is {described['status']}, not FAILED")
        _, history = self._wait_one(execution_arn, time.monotonic() + 60)
        entered = [e for e in history if e["type"].endswith("StateEntered")]
        failed_state = entered[-1]["stateEnteredEventDetails"]
        definition = json.loads(self.definition)
        definition["StartAt"] = failed_state["name"]
        n = self._redrives[execution_arn] = self._redrives.get(execution_arn, 0) + 1
        name = f"{described['name']}-redrive-{n}"
        machine = self.sfn.create_state_machine(name=f"{name}-machine", definition=json.dumps(definition),
                                                roleArn="arn:aws:iam::123456789012:role/longdoc-local-sfn")
        return self.start(json.loads(failed_state["input"]), name, machine_arn=machine["stateMachineArn"])


def _local_start_execution(definition: dict[str, Any]) -> dict[str, Any]:
    """Route ``arn:aws:states:::states:startExecution`` tasks through an in-process Lambda.

    moto 5.2's ASL interpreter fails that integration (``States.Runtime: 'StateMachineArn'``),
    so locally each such Task invokes ``${LocalStartExecutionArn}`` with the same Parameters
    as its payload, and its ResultSelector reads ``$.Payload.<field>`` instead of
    ``$.<field>``. The observable result is the same: a new execution with that name and
    input, and the task's output carrying its ``ExecutionArn``.
    """
    for state in definition.get("States", {}).values():
        if state.get("Resource") != "arn:aws:states:::states:startExecution":
            continue
        state["Resource"] = "arn:aws:states:::lambda:invoke"
        state["Parameters"] = {"FunctionName": "${LocalStartExecutionArn}", "Payload": state.get("Parameters", {})}
        if "ResultSelector" in state:
            state["ResultSelector"] = {k: v.replace("$.", "$.Payload.", 1) if isinstance(v, str) else v
                                       for k, v in state["ResultSelector"].items()}
    return definition


def mock_patch_invoke(lambda_function_cls: Any, by_function: dict[str, Handler]) -> Any:
    """A started-on-demand patch routing moto Lambda invokes to in-process handlers."""
    return mock.patch.object(lambda_function_cls, "_invoke_lambda", _invoke_in_process(by_function))
