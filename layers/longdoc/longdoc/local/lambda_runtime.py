"""The local Lambda stand-in: load a function's handler as Lambda does, build the events AWS delivers.

Used by the CLI (``longdoc ingest``, ``longdoc extract``) and :mod:`longdoc.local.watch`;
imports nothing from either, so neither depends on the other.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote_plus

from longdoc.core.errors import HandlerNotFound

REPO_ROOT = Path(__file__).resolve().parents[4]
"""The repository holding ``functions/`` (this file is ``layers/longdoc/longdoc/local/lambda_runtime.py``)."""


def functions_dir() -> Path:
    """The folder holding one ``<function>/app.py`` per Lambda function: ``$LONGDOC_FUNCTIONS_DIR``, else ``functions/``."""
    return Path(os.environ.get("LONGDOC_FUNCTIONS_DIR", REPO_ROOT / "functions"))


def load_handler(function: str) -> ModuleType:
    """Import ``functions/<function>/app.py`` (the deployable handler) as a module, once per process.

    The module is registered as ``longdoc_function_<function>``, so later calls return the
    same module (and its warm-start state). Raises :class:`HandlerNotFound` when the file is missing.
    """
    path = functions_dir() / function / "app.py"
    if not path.exists():
        raise HandlerNotFound(f"handler not found: {path} (set LONGDOC_FUNCTIONS_DIR)")
    name = f"longdoc_function_{function}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise HandlerNotFound(f"handler not loadable: {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def s3_event_for(key: str, size: int, bucket: str = "local", event_name: str = "ObjectCreated:Put") -> dict[str, Any]:
    """An SQS event holding one S3 notification (``event_name``: ``ObjectCreated:Put``, or
    ``ObjectRemoved:Delete`` with ``size`` 0) for ``key`` (``size`` in bytes).

    Shaped as AWS delivers it (every field Powertools' SQS and S3 parser models require),
    the key URL-encoded as S3 sends keys. The message id is derived from the key and the
    event name, so the same key and event give the same event.
    """
    message_id = hashlib.sha256((key if event_name == "ObjectCreated:Put" else f"{event_name}:{key}").encode()).hexdigest()[:32]
    record = {"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
              "eventTime": "1970-01-01T00:00:00.000Z", "eventName": event_name,
              "userIdentity": {"principalId": "local"}, "requestParameters": {"sourceIPAddress": "127.0.0.1"},
              "responseElements": {"x-amz-request-id": message_id[:16], "x-amz-id-2": message_id},
              "s3": {"s3SchemaVersion": "1.0", "configurationId": "longdoc-local",
                     "bucket": {"name": bucket, "ownerIdentity": {"principalId": "local"},
                                "arn": f"arn:aws:s3:::{bucket}"},
                     "object": {"key": quote_plus(key, safe="/"), "size": size, "eTag": message_id}}}
    return {"Records": [{"messageId": message_id, "receiptHandle": message_id,
                         "body": json.dumps({"Records": [record]}),
                         "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "0", "SenderId": "local",
                                        "ApproximateFirstReceiveTimestamp": "0"},
                         "messageAttributes": {}, "md5OfBody": "", "eventSource": "aws:sqs",
                         "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:longdoc-local-ingest",
                         "awsRegion": "us-east-1"}]}


def batch_failure_reason(module: ModuleType, record: Any) -> str:
    """Why the ingest handler ``module`` reported a batch item failure: the registry reason, else the exception.

    ``record`` is the document's registry entry (or None); the exception is the last one
    the module's Powertools ``processor`` collected.
    """
    if record is not None and record.reason:
        return record.reason
    exceptions = getattr(getattr(module, "processor", None), "exceptions", None) or []
    if exceptions and exceptions[-1][1] is not None:
        exc = exceptions[-1][1]
        return f"{type(exc).__name__}: {exc}"
    return "unknown error (run with LONGDOC_LOG_LEVEL=INFO for the log)"
