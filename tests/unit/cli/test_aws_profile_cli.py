"""A non-existent ``AWS_PROFILE`` with the local CLI (issue 28 follow-up): never a traceback.

Off Lambda the tracer creates no AWS client at handler import (:mod:`longdoc.observability`),
so the offline/Anthropic providers run as usual; on Bedrock the bad profile is one ``ConfigError``
line naming ``AWS_PROFILE`` (:func:`longdoc.adapters.bedrock_access.resolve_bedrock_access`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

# Each test runs the CLI in a subprocess on an ingested home: not in the `make unit` tier.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LONGDOC_HOME holding one ingested two-section text document ``lease``."""
    home = tmp_path_factory.mktemp("home")
    doc = home / "lease.txt"
    doc.write_text("Lease\n\n## 1. Rent\n\nThe Tenant pays EUR 1,200.00 a month.\n\n"
                   "## 2. Governing Law\n\nThis Lease is governed by the laws of Ireland.\n", encoding="utf-8")
    done = _cli(home, "ingest", str(doc), profile=None)
    assert done.returncode == 0, done.stderr
    return home


def _cli(home: Path, *args: str, profile: str | None = "nope", **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LONGDOC_", "ANTHROPIC_", "POWERTOOLS_"))}
    environ.update({"LONGDOC_HOME": str(home), "HF_HUB_OFFLINE": "1",
                    "PYTHONPATH": f"{REPO / 'layers' / 'longdoc'}{os.pathsep}{REPO}",
                    "AWS_CONFIG_FILE": str(home / "no-aws-config"),
                    "AWS_SHARED_CREDENTIALS_FILE": str(home / "no-aws-credentials"), **env})
    if profile:
        environ["AWS_PROFILE"] = profile
    return subprocess.run([sys.executable, "-m", "longdoc.cli", *args], env=environ, capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.mark.parametrize("command", [["summarize", "lease"], ["extract", "lease", "--clause-types", "Governing Law"]])
def test_a_missing_aws_profile_on_bedrock_is_one_line_naming_it(home: Path, command: list[str]) -> None:
    # Given AWS_PROFILE=nope (no such profile) and the Bedrock provider
    # When the user summarises or extracts
    done = _cli(home, *command, LONGDOC_MODEL_PROVIDER="bedrock", LONGDOC_BEDROCK_REGION="eu-west-1")
    # Then the command fails with one line naming the setting, and no traceback
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("longdoc: ") and "AWS_PROFILE=nope" in lines[0], done.stderr


@pytest.mark.parametrize("command", [["summarize", "lease"], ["extract", "lease", "--clause-types", "Governing Law"]])
def test_a_missing_aws_profile_does_not_matter_off_bedrock(home: Path, command: list[str]) -> None:
    # Given AWS_PROFILE=nope and the default (offline) provider, which needs no AWS account
    # When the user summarises or extracts
    done = _cli(home, *command)
    # Then the command runs: the handler import built no AWS client (the tracer is off, with a no-op provider)
    assert "Traceback" not in done.stderr and "ProfileNotFound" not in done.stderr
    assert done.returncode == 0, done.stderr
    assert "SUCCEEDED" in done.stdout or "verified statements" in done.stdout


def test_off_lambda_the_tracer_imports_no_xray_recorder() -> None:
    # Given a fresh interpreter off Lambda (no LAMBDA_TASK_ROOT)
    code = "import sys, longdoc.observability as o; print(type(o.tracer.provider).__name__, 'aws_xray_sdk.core' in sys.modules)"
    environ = {k: v for k, v in os.environ.items() if k != "LAMBDA_TASK_ROOT"}
    environ["PYTHONPATH"] = f"{REPO / 'layers' / 'longdoc'}{os.pathsep}{REPO}"
    # When the observability module is imported
    out = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=True).stdout
    # Then its tracer has the no-op provider and the X-Ray SDK core (which builds a boto client) was never imported
    assert out.split() == ["NoTraceProvider", "False"]


@pytest.mark.parametrize("command", [["summarize", "lease"], ["extract", "lease", "--clause-types", "Governing Law"]])
def test_the_bedrock_region_line_is_logged_by_every_model_command(home: Path, command: list[str]) -> None:
    # Given Bedrock with keys in the environment, LONGDOC_LOG_LEVEL=INFO (over an inherited
    # POWERTOOLS_LOG_LEVEL=CRITICAL, as an earlier command in the same shell leaves it) and a Bedrock fake
    # that refuses every call (so the command ends at once after composing its model)
    from tests.fakes.bedrock_server import FakeBedrock, bedrock_error

    with FakeBedrock(responder=lambda body: bedrock_error(400, "ValidationException", "refused by the test"),
                     access_key="AKIATESTNOTREAL", secret_key="test-secret-not-real", region="eu-west-1") as fake:
        done = _cli(home, *command, profile=None, LONGDOC_MODEL_PROVIDER="bedrock", LONGDOC_MODEL="claude",
                    LONGDOC_LOG_LEVEL="INFO", POWERTOOLS_LOG_LEVEL="CRITICAL", AWS_REGION="eu-west-1", AWS_ACCESS_KEY_ID="AKIATESTNOTREAL",
                    AWS_SECRET_ACCESS_KEY="test-secret-not-real", ANTHROPIC_BEDROCK_MANTLE_BASE_URL=fake.mantle_url)
    # Then stderr holds the line naming the region, its source, the credential source and the default model,
    # never the key
    assert "Bedrock: region eu-west-1 (from AWS_REGION), credentials env; model anthropic.claude-sonnet-5-5" \
        in done.stderr, done.stderr[-2000:]
    assert "test-secret-not-real" not in done.stderr
