"""Claude on Bedrock from a laptop (issue 28): the region and credentials are resolved once through
boto3's session (a profile, ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, or ``LONGDOC_BEDROCK_REGION``),
passed to the SDK's Bedrock client and logged without a key; the local engine's moto sandbox covers
its stand-ins only, never the model client; an inference-profile prefix that cannot be called from
the region is a configuration error at start-up. Requests go through the real ``anthropic`` SDK to
:class:`tests.fakes.bedrock_server.StrictBedrock`, which verifies each SigV4 signature against the
credentials and region it is given (as AWS would: a request signed with moto's fake key is a 403).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.bedrock_access import BedrockAccess, check_region_matches
from longdoc.adapters.claude import ClaudeModel
from longdoc.config import ModelSettings, function_settings
from longdoc.core.errors import ConfigError
from longdoc.core.messages import Message, ModelRequest, TextBlock
from longdoc.core.model_defaults import DEFAULT_MODELS
from longdoc.local.engine import LocalStepFunctions
from tests.fakes.anthropic_server import message_reply, text_block
from tests.fakes.bedrock_server import StrictBedrock

PROFILE_KEY, PROFILE_SECRET = "AKIAPROFILEKEYNOTREAL", "profile-secret-not-real"
MODEL = DEFAULT_MODELS["bedrock"]  # anthropic.claude-sonnet-5-5: the Messages-API (Mantle) endpoint


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No AWS variable of the machine, no cached SDK session or settings, before and after."""
    from anthropic.lib.aws import _auth

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
                 "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_BEARER_TOKEN_BEDROCK", "LONGDOC_BEDROCK_REGION",
                 "LONGDOC_CLAUDE_MODEL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    _auth._get_session.cache_clear()
    wiring.reset()
    yield
    _auth._get_session.cache_clear()
    wiring.reset()


@pytest.fixture
def laptop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A laptop's AWS set-up: profile ``dev`` (its keys in the shared credentials file, region eu-west-1),
    local mode with ``LONGDOC_MODEL_PROVIDER=bedrock``."""
    (tmp_path / "credentials").write_text(f"[dev]\naws_access_key_id = {PROFILE_KEY}\n"
                                          f"aws_secret_access_key = {PROFILE_SECRET}\n", encoding="utf-8")
    (tmp_path / "config").write_text("[profile dev]\nregion = eu-west-1\n", encoding="utf-8")
    for name, value in {"AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
                        "AWS_CONFIG_FILE": str(tmp_path / "config"), "AWS_PROFILE": "dev",
                        "LONGDOC_MODE": "local", "LONGDOC_HOME": str(tmp_path / "home"),
                        "LONGDOC_MODEL": "claude", "LONGDOC_MODEL_PROVIDER": "bedrock"}.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


def _request() -> ModelRequest:
    return ModelRequest(system=[], tools=[], max_tokens=4096,
                        messages=[Message(role="user", content=[{"type": "text", "text": "hi"}])])


def test_a_local_run_signs_with_the_profile_and_its_region_not_the_sandbox(laptop: pytest.MonkeyPatch,
                                                                          tmp_path: Path,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    # Given the profile's credentials and region, Bedrock's Messages endpoint at a strict fake that
    # accepts only those, and a one-task state machine whose handler calls the model
    definition = tmp_path / "one.asl.json"
    definition.write_text(json.dumps({"StartAt": "Call", "States": {
        "Call": {"Type": "Task", "Resource": "${CallFunctionArn}", "End": True}}}), encoding="utf-8")

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        response = wiring.model().create(_request())
        return {"text": "".join(b.text for b in response.content if isinstance(b, TextBlock))}

    with StrictBedrock(access_key=PROFILE_KEY, secret_key=PROFILE_SECRET, region="eu-west-1") as fake:
        laptop.setenv("ANTHROPIC_BEDROCK_MANTLE_BASE_URL", fake.mantle_url)
        fake.enqueue(message_reply([text_block("signed by the profile")]))
        # When the handler runs inside the local engine (moto's fake keys, us-east-1, no AWS_PROFILE there)
        with caplog.at_level(logging.INFO, logger="longdoc.adapters.bedrock_access"), \
                LocalStepFunctions(definition, {"CallFunctionArn": handler}) as machine:
            result = machine.wait(machine.start({}))
    # Then the request was signed with the profile's key for eu-west-1 and answered
    assert result.status == "SUCCEEDED" and result.output == {"text": "signed by the profile"}
    assert fake.bad_signatures == 0 and fake.invoked_models == [MODEL]
    # And the default Bedrock model was used (no LONGDOC_CLAUDE_MODEL), and one log line names the
    # region, where it came from and the credential source, never the key
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Bedrock: ")]
    assert lines == [f"Bedrock: region eu-west-1 (from profile 'dev'), credentials shared-credentials-file "
                     f"(profile 'dev'); model {MODEL}"]
    assert PROFILE_SECRET not in caplog.text and PROFILE_KEY not in caplog.text


def test_the_explicit_region_setting_wins_and_a_mismatched_profile_prefix_fails_at_start(
        laptop: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Given the profile's region eu-west-1 but LONGDOC_BEDROCK_REGION=us-east-1 and an eu. inference profile
    laptop.setenv("LONGDOC_BEDROCK_REGION", "us-east-1")
    laptop.setenv("LONGDOC_CLAUDE_MODEL", "eu.anthropic.claude-sonnet-4-5-20250929-v1:0")
    definition = tmp_path / "one.asl.json"
    definition.write_text(json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}), encoding="utf-8")
    # When the local engine starts, Then it refuses before running anything, naming both settings
    with pytest.raises(ConfigError, match=r"LONGDOC_CLAUDE_MODEL=eu\.anthropic.* 'eu\.' inference profile.*"
                                          r"us-east-1: set LONGDOC_BEDROCK_REGION"):
        LocalStepFunctions(definition, {}).__enter__()


def test_a_bedrock_api_key_is_used_as_a_bearer_token(laptop: pytest.MonkeyPatch) -> None:
    # Given a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK (and the profile's region)
    laptop.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-not-real")
    with StrictBedrock(access_key=PROFILE_KEY, secret_key=PROFILE_SECRET, region="eu-west-1") as fake:
        laptop.setenv("ANTHROPIC_BEDROCK_MANTLE_BASE_URL", fake.mantle_url)
        fake.enqueue(message_reply([text_block("ok")]))
        # When the composed model is called
        wiring.model().create(_request())
    # Then the request carried the key as a bearer token, not a signature
    assert fake.requests[0].headers["authorization"] == "Bearer bedrock-api-key-not-real"


def test_refreshed_credentials_rebuild_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given credentials that botocore refreshes between two calls (temporary SSO / assume-role keys)
    class Frozen:
        def __init__(self, key: str) -> None:
            self.access_key, self.secret_key, self.token = key, f"{key}-secret", f"{key}-token"

    class Refreshing:
        method = "sso"

        def __init__(self) -> None:
            self.current = Frozen("AKIAFIRSTNOTREAL")

        def get_frozen_credentials(self) -> Frozen:
            return self.current

    credentials = Refreshing()
    access = BedrockAccess("eu-west-1", "AWS_REGION", "sso", credentials=credentials)
    with StrictBedrock(access_key="AKIAFIRSTNOTREAL", secret_key="AKIAFIRSTNOTREAL-secret", region="eu-west-1") as fake:
        model = ClaudeModel(None, MODEL, provider="bedrock", base_url=fake.mantle_url, aws_access=access)
        fake.enqueue(message_reply([text_block("one")]), message_reply([text_block("two")]))
        model.create(_request())
        credentials.current = Frozen("AKIASECONDNOTREAL")
        fake._credentials = ("AKIASECONDNOTREAL", "AKIASECONDNOTREAL-secret")
        # When the model is called again
        model.create(_request())
    # Then the second request was signed with the refreshed key (the client was rebuilt)
    signed_with = [r.headers["authorization"].split("Credential=")[1].split("/")[0] for r in fake.requests]
    assert signed_with == ["AKIAFIRSTNOTREAL", "AKIASECONDNOTREAL"] and fake.bad_signatures == 0
    assert "SECOND" not in repr(access) and "FIRST" not in repr(model)


@pytest.mark.parametrize(("model_id", "region", "ok"), [
    ("eu.anthropic.claude-sonnet-4-5-20250929-v1:0", "eu-central-1", True),
    ("eu.anthropic.claude-sonnet-4-5-20250929-v1:0", "us-east-1", False),
    ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "eu-west-1", False),
    ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "us-west-2", True),
    ("apac.anthropic.claude-sonnet-4-5-20250929-v1:0", "ap-southeast-2", True),
    ("apac.anthropic.claude-sonnet-4-5-20250929-v1:0", "eu-west-1", False),
    ("global.anthropic.claude-sonnet-5-5", "ap-south-1", True),
    ("anthropic.claude-sonnet-4-5-20250929-v1:0", "eu-west-3", True),  # a foundation model id: no prefix
    ("arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/a1b2c3d4e5f6", "eu-west-1", True),
    ("arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/a1b2c3d4e5f6", "us-east-1", False),
])
def test_an_inference_profile_must_be_callable_from_the_region(model_id: str, region: str, ok: bool) -> None:
    # When a model id is checked against the region, Then a geography or ARN region that excludes it is refused
    if ok:
        check_region_matches(model_id, region)
    else:
        with pytest.raises(ConfigError, match="LONGDOC_CLAUDE_MODEL=.*LONGDOC_BEDROCK_REGION"):
            check_region_matches(model_id, region)


def test_the_default_model_follows_the_provider_and_an_empty_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given ModelProvider=bedrock and no LONGDOC_CLAUDE_MODEL, Then the default is the Bedrock one (was the Anthropic id)
    monkeypatch.setenv("LONGDOC_MODEL_PROVIDER", "bedrock")
    assert ModelSettings().claude_model == DEFAULT_MODELS["bedrock"] == "anthropic.claude-sonnet-5-5"
    monkeypatch.setenv("LONGDOC_MODEL_PROVIDER", "anthropic")
    assert ModelSettings().claude_model == DEFAULT_MODELS["anthropic"]
    # And an empty LONGDOC_CLAUDE_MODEL is a configuration error naming the variable, not a silent default
    monkeypatch.setenv("LONGDOC_CLAUDE_MODEL", "")
    function_settings.cache_clear()
    with pytest.raises(ConfigError, match="LONGDOC_CLAUDE_MODEL is set but empty"):
        function_settings(ModelSettings)
    function_settings.cache_clear()


def test_no_region_anywhere_is_a_clear_error(laptop: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Given a profile without a region and no region variable
    (tmp_path / "config").write_text("[profile dev]\noutput = json\n", encoding="utf-8")
    # When the model is composed, Then the error says which settings give a region
    with pytest.raises(ConfigError, match="no AWS region for Bedrock: set LONGDOC_BEDROCK_REGION, AWS_REGION"):
        wiring.model()
