"""Pydantic models of the events the handlers receive and return (Step Functions payloads).

Only ids and counters travel between states (the 256 KB payload limit of Step Functions,
https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html); the stores hold
documents, checkpoints and extractions.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class StepError(BaseModel):
    """The ``Error``/``Cause`` pair that Step Functions puts in a Catch result."""

    Error: str = "Unknown"
    Cause: str = ""


class ExtractTaskInput(BaseModel):
    """Input of the extract function: run a session (``action="session"``) or record a failure (``"fail"``).

    ``iteration`` counts sessions of the run over all its executions (cap ``max_iterations``);
    ``execution_iterations`` counts them in this execution (continue-as-new after
    ``iterations_per_execution``); ``generation`` is 1 for the first execution of a run.
    ``execution`` is ``$$.Execution.Name``; ``entered`` is ``$$.State.EnteredTime`` of the
    failure-recording state (a new value there means a redrive).
    """

    action: Literal["session", "fail"] = "session"
    run_id: str
    doc_id: str
    iteration: int = Field(0, ge=0)
    max_iterations: int = Field(40, ge=1)
    execution_iterations: int = Field(0, ge=0)
    iterations_per_execution: int = Field(500, ge=1)
    generation: int = Field(1, ge=1)
    execution: str | None = None
    entered: str | None = None
    error: StepError | None = None


class ExtractTaskOutput(BaseModel):
    """Where a run stands after a session; every field is small and explains the state."""

    run_id: str
    doc_id: str
    iteration: int
    max_iterations: int
    status: Literal["CONTINUE", "DONE", "FAILED"]
    stop_reason: str | None = None
    sessions: int = 0
    checkpoint_version: int = 0
    extracted: int = 0
    pending: int = 0
    execution_iterations: int = 0
    iterations_per_execution: int = 500
    generation: int = 1
    next_execution: str = Field("", description="name a continue-as-new execution of this run would take")




