"""Pydantic models of the events the extract handler receives and returns (Step Functions payloads).

Only ids and counters travel between states (the 256 KB payload limit of Step Functions,
https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html); the stores hold
documents, checkpoints and extractions.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from longdoc.core.payloads import StepError


def execution_name(run_id: str, generation: int) -> str:
    """Name of a run's execution: the run id for generation 1, ``<run_id>-g<generation>`` after continue-as-new.

    Names are unique per state machine, so a retried start never starts a second execution.
    """
    return run_id if generation == 1 else f"{run_id}-g{generation}"


class ExecutionInput(BaseModel):
    """Input of one execution of the extraction state machine: the run and its loop counters.

    The single definition of that input: the first execution's is :meth:`first`; the
    ``ContinueAsNew`` state of ``statemachine/extract.asl.json`` writes the same fields (ASL
    cannot import this model; a test pins its ``Input`` to these fields).
    ``iteration`` counts sessions of the run over all its executions (cap ``max_iterations``);
    ``execution_iterations`` counts them in this execution (continue-as-new after
    ``iterations_per_execution``); ``generation`` is 1 for the first execution of a run.
    """

    run_id: str
    doc_id: str
    iteration: int = Field(0, ge=0)
    max_iterations: int = Field(40, ge=1)
    execution_iterations: int = Field(0, ge=0)
    iterations_per_execution: int = Field(500, ge=1)
    generation: int = Field(1, ge=1)

    @classmethod
    def first(cls, run_id: str, doc_id: str, *, max_iterations: int, iterations_per_execution: int) -> ExecutionInput:
        """The input of a run's first execution (generation 1, no session yet)."""
        return cls(run_id=run_id, doc_id=doc_id, max_iterations=max_iterations,
                   iterations_per_execution=iterations_per_execution)

    def counters(self) -> dict[str, Any]:
        """This input's own fields (not a subclass's) as a dict, plus ``next_execution``: the loop state a task passes on."""
        return {**{name: getattr(self, name) for name in ExecutionInput.model_fields},
                "next_execution": execution_name(self.run_id, self.generation + 1)}


class ExtractTaskInput(ExecutionInput):
    """Input of the extract function: run a session (``action="session"``) or record a failure (``"fail"``).

    The execution's counters (:class:`ExecutionInput`) plus: ``execution`` is
    ``$$.Execution.Name``; ``entered`` is ``$$.State.EnteredTime`` of the failure-recording
    state (a new value there means a redrive); ``error`` is the caught error.
    """

    action: Literal["session", "fail"] = "session"
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
    cut_blocks: int = Field(0, description="reply blocks this session cut on max_tokens / the context window, never stored")
    execution_iterations: int = 0
    iterations_per_execution: int = 500
    generation: int = 1
    next_execution: str = Field("", description="name a continue-as-new execution of this run would take")
