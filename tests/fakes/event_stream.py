"""AWS event-stream framing for the Bedrock fake's ``InvokeModelWithResponseStream`` answers.

A message is a prelude (total length, headers length: 4-byte big-endian each; CRC32 of those
8 bytes), the headers (1-byte name length, name, value type 7 = string, 2-byte value length,
value), the payload, and the CRC32 of everything before it ("Event stream encoding",
https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream,
the framing botocore's ``EventStreamBuffer`` decodes). Bedrock's stream carries ``chunk`` events
whose payload is ``{"bytes": base64(<one Messages API stream event as JSON>)}`` and ends with an
``exception`` message (``:exception-type: throttlingException`` ..., payload ``{"message"}``) when
it fails after the HTTP 200 (the ``ResponseStream`` members of
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html).
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any

CONTENT_TYPE = "application/vnd.amazon.eventstream"


def _headers(headers: dict[str, str]) -> bytes:
    out = b""
    for name, value in headers.items():
        raw_name, raw_value = name.encode("utf-8"), value.encode("utf-8")
        out += struct.pack(">B", len(raw_name)) + raw_name + b"\x07" + struct.pack(">H", len(raw_value)) + raw_value
    return out


def message(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message with string ``headers`` and ``payload``, both CRCs computed."""
    head = _headers(headers)
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + head + payload
    return body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def chunk(event: dict[str, Any]) -> bytes:
    """A ``chunk`` event carrying one Messages API stream event (``message_start``, ``content_block_delta`` ...)."""
    payload = json.dumps({"bytes": base64.b64encode(json.dumps(event).encode("utf-8")).decode("ascii")})
    return message({":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"},
                   payload.encode("utf-8"))


def exception(exception_type: str, text: str) -> bytes:
    """An ``exception`` message (``throttlingException``, ``serviceUnavailableException`` ...) with ``{"message"}``."""
    return message({":exception-type": exception_type, ":content-type": "application/json",
                    ":message-type": "exception"}, json.dumps({"message": text}).encode("utf-8"))
