"""A failure shown to a user is one line: the innermost error, no stack trace, and the next step never cut."""

from __future__ import annotations

import json

from longdoc.core.failures import MESSAGE_CHARS, innermost_error, with_next_step


def _payload(kind: str, message: str) -> str:
    """A Lambda error payload as the local engine and Lambda write it (stack frames with absolute paths)."""
    return json.dumps({"errorType": kind, "errorMessage": message,
                       "stackTrace": ['  File "/home/user/longdoc/layers/longdoc/longdoc/extract/session.py", line 97\\n',
                                      "    raise ModelRequestError(...)\\n"]})


def test_the_innermost_error_of_a_nested_cause_carries_no_trace_or_path() -> None:
    # Given the cause the fail state used to raise: "<error>: <cause>" with the session's payload inside
    cause = _payload("ExtractionFailed", "ModelRequestError: " + _payload("ModelRequestError", "HTTP 400: bad tool"))
    # When it is read / Then it is one line naming the innermost error only
    line = innermost_error("ExtractionFailed", cause)
    assert line == "ModelRequestError: HTTP 400: bad tool"


def test_a_plain_text_traceback_is_cut_off() -> None:
    # Given a cause whose message carries a Python traceback
    cause = ('NoProgress: run r stalled. Traceback (most recent call last):\n  File "/srv/app.py", line 3, in h\n'
             "    x()\nNoProgress: run r stalled")
    # Then only the message before it remains, on one line
    assert innermost_error("NoProgress", cause) == "NoProgress: run r stalled."


def test_the_next_step_survives_a_long_message() -> None:
    # Given a 2,000-character reason / When it is joined to the resume command
    line = with_next_step("run run-1 failed: " + "x" * 2000, "longdoc runs resume run-1")
    # Then the line fits and ends with the whole command
    assert len(line) <= MESSAGE_CHARS and "\n" not in line
    assert line.endswith("; next: longdoc runs resume run-1")
