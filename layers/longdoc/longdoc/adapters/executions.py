"""Starting executions of the extraction state machine on AWS Step Functions.

:class:`StepFunctionsStarter` implements :class:`~longdoc.core.ports.ExecutionStarter`
with ``StartExecution``
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html),
counts running executions for admission control with ``ListExecutions``
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html) and
reads one execution's status with ``DescribeExecution``
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_DescribeExecution.html).
The boto3 client is created on the first start, never at import (Lambda cold start, tests
that open their own moto context); the local engine's implementation is
:meth:`longdoc.local.engine.LocalStepFunctions.start_execution`.
"""

from __future__ import annotations

import json
from typing import Any


class StepFunctionsStarter:
    """Starts executions of one state machine (``state_machine_arn``) through boto3.

    ``client`` is a ready ``stepfunctions`` client (tests); None builds one with the default
    session on first use and keeps it for this object's lifetime.
    """

    def __init__(self, state_machine_arn: str, client: Any | None = None):
        self.state_machine_arn = state_machine_arn
        self._client = client

    def _sfn(self) -> Any:
        """The boto3 Step Functions client, created on first use."""
        if self._client is None:
            import boto3

            self._client = boto3.client("stepfunctions")
        return self._client

    def start_execution(self, name: str, execution_input: dict[str, Any]) -> str:
        """Start execution ``name`` with ``execution_input`` (sent as JSON); returns its ``executionArn``.

        botocore's errors propagate (``ExecutionAlreadyExists`` for a name reused with another
        input, throttling after the client's own retries, ...).
        """
        response = self._sfn().start_execution(stateMachineArn=self.state_machine_arn, name=name,
                                               input=json.dumps(execution_input))
        return str(response["executionArn"])

    def count_running(self, limit: int) -> int:
        """How many executions of the state machine are ``RUNNING``, counted up to ``limit`` (one page).

        ``limit`` is 1-1000 (ListExecutions' ``maxResults``); a result equal to ``limit`` means
        "at least ``limit``". botocore's errors propagate.
        """
        response = self._sfn().list_executions(stateMachineArn=self.state_machine_arn, statusFilter="RUNNING",
                                               maxResults=limit)
        return len(response.get("executions", []))

    def execution_status(self, name: str) -> str:
        """The status of execution ``name`` of this state machine (``RUNNING``, ``SUCCEEDED``, ``FAILED``,
        ``TIMED_OUT``, ``ABORTED``, ``PENDING_REDRIVE``); botocore's errors propagate
        (``ExecutionDoesNotExist``)."""
        arn = self.state_machine_arn.replace(":stateMachine:", ":execution:", 1) + ":" + name
        return str(self._sfn().describe_execution(executionArn=arn)["status"])
