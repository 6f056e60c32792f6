"""Pydantic model of the event the bulk handler receives (a Step Functions payload of ``statemachine/bulk.asl.json``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from longdoc.core.payloads import StepError


class BulkTaskInput(BaseModel):
    """One state's payload: the action, the job id and the counters that action needs."""

    model_config = ConfigDict(extra="ignore")
    action: Literal["create_runs", "prepare", "prepare_slice", "prepared", "prime", "poll_prime", "submit", "poll",
                    "harvest", "finish", "fail"]
    bulk_id: str
    round: int = 0
    polls: int = 0
    not_found: int = 0
    error: StepError | None = None
    entered: str = ""
    slice: int = 0
    """``prepare_slice``: the slice number (:mod:`longdoc.bulk.slices`)."""
    started_round: int | None = None
    """``harvest``: the round this execution started at (``$$.Execution.Input.round``), for continue-as-new."""
