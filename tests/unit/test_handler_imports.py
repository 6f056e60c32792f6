"""Heavy SDKs load only in the function that needs them (cold start, package per function)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("app", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(json.dumps(sorted(m for m in ("anthropic", "voyageai", "pinecone", "torch", "lancedb") if m in sys.modules)))
"""


def loaded_after_import(function: str) -> list[str]:
    """Import ``functions/<function>/app.py`` in a fresh AWS-mode interpreter; return heavy SDKs loaded."""
    env = {**os.environ, "LONGDOC_MODE": "aws", "LONGDOC_BUCKET": "b", "LONGDOC_TABLE": "t",
           "AWS_DEFAULT_REGION": "us-east-1",
           "PYTHONPATH": os.pathsep.join([str(REPO / "layers" / "longdoc"), str(REPO)])}
    done = subprocess.run([sys.executable, "-c", PROBE.format(path=str(REPO / "functions" / function / "app.py"))],
                          env=env, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_ingest_handler_import_loads_no_heavy_sdk() -> None:
    # Given a fresh interpreter, When the ingest handler module is imported as Lambda imports it
    loaded = loaded_after_import("ingest")
    # Then neither anthropic (extract only) nor voyageai/pinecone (first record) nor local stand-ins are loaded
    assert "anthropic" not in loaded
    assert loaded == []


def test_api_handler_import_loads_no_model_sdk() -> None:
    # Given a fresh interpreter, When the API handler module is imported
    loaded = loaded_after_import("api")
    # Then no model, embedding or index SDK is loaded
    assert loaded == []
