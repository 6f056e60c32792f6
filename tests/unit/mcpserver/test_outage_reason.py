"""An outage of a service the product depends on reaches an MCP client as such, with when to retry."""

from __future__ import annotations

import pytest

from longdoc.core import errors
from longdoc.mcpserver.server import _reason


@pytest.mark.parametrize("outage", [cls.__name__ for cls in errors.OUTAGES])
def test_an_outage_is_a_retry_later_tool_error(outage: str) -> None:
    # Given a tool call that failed on an outage (Claude throttled, Pinecone or Voyage down)
    exc = getattr(errors, outage)("the service said 529")
    # When the reason is worded for the client
    reason = _reason(exc, [])
    # Then it says the service is unavailable, names the error and when to retry, and keeps the cause
    assert reason == (f"service unavailable ({outage}), retry after {errors.OUTAGE_RETRY_AFTER_SECONDS} s: "
                      "the service said 529")


def test_a_caller_error_is_not_worded_as_an_outage() -> None:
    assert "service unavailable" not in _reason(errors.NotFound("run run-1 does not exist"), [])
