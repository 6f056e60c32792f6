"""Starting executions of the extraction state machine on AWS Step Functions.

:class:`StepFunctionsStarter` implements :class:`~longdoc.core.ports.ExecutionStarter`
with ``StartExecution``
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html).
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
