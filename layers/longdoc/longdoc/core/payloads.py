"""Step Functions payload shapes shared by every stage (below the stages' own ``payloads`` modules)."""

from __future__ import annotations

from pydantic import BaseModel


class StepError(BaseModel):
    """The ``Error``/``Cause`` pair that Step Functions puts in a Catch result."""

    Error: str = "Unknown"
    Cause: str = ""
