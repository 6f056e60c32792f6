"""Powertools Logger, Tracer and Metrics shared by every function (one instance per process).

Service name and metrics namespace come from ``POWERTOOLS_SERVICE_NAME`` and
``POWERTOOLS_METRICS_NAMESPACE``; outside Lambda the tracer is disabled by Powertools.
"""

from __future__ import annotations

import logging
import os
import sys

from aws_lambda_powertools import Logger, Metrics, Tracer

os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "longdoc")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "longdoc")

# stderr keeps stdout clean for the CLI's --json output; Lambda sends both to CloudWatch Logs.
logger = Logger(logger_handler=logging.StreamHandler(sys.stderr))
tracer = Tracer()
metrics = Metrics()
