"""Heavy SDKs load only in the function that needs them (cold start, package per function)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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


LOCAL_HEAVY = ("lancedb", "onnxruntime", "torch", "sentence_transformers", "tokenizers", "anthropic")

LOCAL_PROBE = """
import importlib.util, json, sys
import longdoc.cli
spec = importlib.util.spec_from_file_location("app", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""

INDEX_PROBE = """
import json, sys
from longdoc import wiring
from longdoc.adapters.vector_index import LanceDBIndex
from longdoc.core.errors import ConfigError
index = wiring.vector_index()
built = "lancedb" in sys.modules
LanceDBIndex(index.path, 8).count()  # another process's table of 8-dimensional vectors
try:
    index.count()
    error = None
except ConfigError as exc:
    error = str(exc)
print(json.dumps({"lancedb_after_build": built, "lancedb_after_use": "lancedb" in sys.modules, "error": error}))
"""


def _local_probe(code: str, home: Path) -> Any:
    """Run ``code`` in a fresh local-mode interpreter with ``home`` as LONGDOC_HOME; its last stdout line as JSON."""
    env = {**os.environ, "LONGDOC_MODE": "local", "LONGDOC_HOME": str(home),
           "PYTHONPATH": os.pathsep.join([str(REPO / "layers" / "longdoc"), str(REPO)])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_cli_and_local_ingest_handler_import_loads_no_model_or_index_library(tmp_path: Path) -> None:
    # Given a fresh local-mode interpreter, When the CLI and the ingest handler modules are imported
    loaded = _local_probe(LOCAL_PROBE.format(path=str(REPO / "functions" / "ingest" / "app.py"),
                                             heavy=LOCAL_HEAVY), tmp_path)
    # Then no embedding runtime, vector index library or model SDK is loaded yet
    assert loaded == []


def test_local_index_imports_lancedb_at_first_use_and_still_checks_the_dimension(tmp_path: Path) -> None:
    # Given a home whose LanceDB table holds 8-dimensional vectors, When wiring builds the local index
    # (384 dimensions, the MiniLM's) and then uses it
    seen = _local_probe(INDEX_PROBE, tmp_path)
    # Then building it imported nothing heavy, and the first use opened the table and refused it
    assert seen["lancedb_after_build"] is False
    assert seen["lancedb_after_use"] is True
    assert seen["error"] is not None and "8-dimensional" in seen["error"] and "384" in seen["error"]
