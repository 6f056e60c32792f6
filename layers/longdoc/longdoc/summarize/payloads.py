"""Pydantic model of the event the summarize handler receives (a Step Functions payload of ``statemachine/summarize.asl.json``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from longdoc.core.payloads import StepError


class SummarizeTaskInput(BaseModel):
    """One state's payload: the action, the summary id and the counter that action needs."""

    model_config = ConfigDict(extra="ignore")
    action: Literal["plan", "map", "reduce", "synthesize", "fail"]
    summary_id: str
    index: int = 0
    level: int = 0
    error: StepError | None = None
