"""Settings of summaries (environment, prefix ``LONGDOC_``): sizes in estimated tokens, concurrency in calls."""

from __future__ import annotations

from pydantic import Field

from longdoc.config import ModelSettings, StoreSettings


class SummarizeSettings(StoreSettings, ModelSettings):
    """The summarize function's settings: stores, model, and the summary sizes.

    ``summary_single_call_tokens``: a document whose rendered sections fit this many tokens
    is summarised in one call, no map. ``summary_group_min_tokens``/``max``: the size of a
    map group. ``summary_reduce_input_tokens``: most input tokens of partial summaries per
    reduce or final call (more, and another reduce level runs). ``summary_map_concurrency``:
    the Map state's MaxConcurrency; ``summary_reduce_concurrency``: reduce calls at once
    inside one invocation.
    """

    summary_single_call_tokens: int = Field(32000, ge=1000, le=180000)
    summary_group_min_tokens: int = Field(1500, ge=100, le=20000)
    summary_group_max_tokens: int = Field(3000, ge=200, le=40000)
    summary_reduce_input_tokens: int = Field(12000, ge=500, le=150000)
    summary_map_concurrency: int = Field(8, ge=1, le=40)
    summary_reduce_concurrency: int = Field(4, ge=1, le=16)
