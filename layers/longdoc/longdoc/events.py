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
    """Input of the extract function: run a session (``action="session"``) or record a failure."""

    action: Literal["session", "fail"] = "session"
    run_id: str
    doc_id: str
    iteration: int = Field(0, ge=0)
    max_iterations: int = Field(40, ge=1)
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
