"""Powertools Logger, Tracer and Metrics shared by every function (one instance per process).

Service name and metrics namespace come from ``POWERTOOLS_SERVICE_NAME`` and
``POWERTOOLS_METRICS_NAMESPACE``.

Tracing runs on Lambda only. Off Lambda (the local CLI and server, ``LONGDOC_MODE=local``, SAM
local, tests) the tracer is disabled **and** given a no-op provider (:class:`NoTraceProvider`):
Powertools' ``Tracer`` imports ``aws_xray_sdk.core`` for its default provider even when disabled,
and that import builds an X-Ray boto client (its sampler's ``ServiceConnector``), which reads the
AWS config and raises ``ProfileNotFound`` at handler import for a bad ``AWS_PROFILE``
(aws-lambda-powertools 3.x ``Tracer.__build_config``; aws-xray-sdk ``core/__init__.py``).
"""

from __future__ import annotations

import logging
import numbers
import os
import sys
from collections.abc import AsyncGenerator, Generator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.tracing.base import BaseProvider, BaseSegment

os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "longdoc")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "longdoc")


def tracing_enabled() -> bool:
    """True on Lambda (``LAMBDA_TASK_ROOT`` set, the variable the Lambda runtime sets) unless
    ``LONGDOC_MODE=local``, SAM local (``AWS_SAM_LOCAL``) or ``POWERTOOLS_TRACE_DISABLED=true``."""
    if not os.environ.get("LAMBDA_TASK_ROOT") or os.environ.get("AWS_SAM_LOCAL"):
        return False
    if os.environ.get("LONGDOC_MODE", "").lower() == "local":
        return False
    return os.environ.get("POWERTOOLS_TRACE_DISABLED", "false").lower() not in ("1", "true", "yes", "on")


class _NoSegment(BaseSegment):
    """A segment that records nothing (what a disabled tracer's handler wrapper writes to)."""

    def close(self, end_time: int | None = None) -> None:
        """Nothing to close."""

    def add_subsegment(self, subsegment: Any) -> None:
        """Ignored."""

    def remove_subsegment(self, subsegment: Any) -> None:
        """Ignored."""

    def put_annotation(self, key: str, value: str | numbers.Number | bool) -> None:
        """Ignored."""

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        """Ignored."""

    def add_exception(self, exception: BaseException, stack: Any, remote: bool = False) -> None:
        """Ignored (the handler's own error handling reports it)."""


class NoTraceProvider(BaseProvider):
    """A tracing provider that creates no client and records nothing (off Lambda; module docstring)."""

    @contextmanager
    def in_subsegment(self, name: str | None = None, **kwargs: Any) -> Generator[BaseSegment, None, None]:
        """A no-op subsegment."""
        yield _NoSegment()

    @asynccontextmanager
    async def in_subsegment_async(self, name: str | None = None,
                                  **kwargs: Any) -> AsyncGenerator[BaseSegment, None]:
        """A no-op subsegment."""
        yield _NoSegment()

    def put_annotation(self, key: str, value: str | numbers.Number | bool) -> None:
        """Ignored."""

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        """Ignored."""

    def patch(self, modules: Sequence[str]) -> None:
        """Nothing to patch."""

    def patch_all(self) -> None:
        """Nothing to patch."""


# stderr keeps stdout clean for the CLI's --json output; Lambda sends both to CloudWatch Logs.
logger = Logger(logger_handler=logging.StreamHandler(sys.stderr))
tracer = Tracer() if tracing_enabled() else Tracer(disabled=True, auto_patch=False, provider=NoTraceProvider())
metrics = Metrics()
