"""API key lookup: Secrets Manager (moto) through Powertools, or the environment."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from longdoc.adapters.secrets import api_key
from longdoc.core.errors import ConfigError

ENV_VAR = "LONGDOC_TEST_API_KEY"
FAKE_KEY = "sk-test-not-real-0123"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fake AWS credentials/region, no test env var, and an empty Powertools cache."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv(ENV_VAR, raising=False)
    parameters.clear_caches()
    yield
    parameters.clear_caches()


@pytest.fixture
def secretsmanager() -> Iterator[object]:
    with mock_aws():
        yield boto3.client("secretsmanager", region_name="us-east-1")


def test_raw_secret_string(secretsmanager) -> None:
    # Given a secret holding the bare key (with a trailing newline, as pasted)
    secretsmanager.create_secret(Name="longdoc/anthropic", SecretString=FAKE_KEY + "\n")
    # When the key is read by secret name
    key = api_key(ENV_VAR, "longdoc/anthropic")
    # Then the stripped key is returned
    assert key == FAKE_KEY


def test_json_secret_string(secretsmanager) -> None:
    # Given a secret holding {"api_key": ...}
    secretsmanager.create_secret(Name="longdoc/voyage", SecretString=json.dumps({"api_key": FAKE_KEY}))
    # When the key is read
    key = api_key(ENV_VAR, "longdoc/voyage")
    # Then the api_key field is returned
    assert key == FAKE_KEY


def test_secret_wins_over_env_and_is_cached(secretsmanager, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given both an env var and a secret
    monkeypatch.setenv(ENV_VAR, "env-value-not-used")
    secretsmanager.create_secret(Name="longdoc/anthropic", SecretString="first-value")
    # When the key is read, the secret changes, and the key is read again within max_age
    first = api_key(ENV_VAR, "longdoc/anthropic")
    secretsmanager.put_secret_value(SecretId="longdoc/anthropic", SecretString="second-value")
    second = api_key(ENV_VAR, "longdoc/anthropic")
    # Then the secret is used and the cached value is served (Powertools max_age=300 s)
    assert first == "first-value"
    assert second == "first-value"
    # And after clearing the cache the new value is read
    parameters.clear_caches()
    assert api_key(ENV_VAR, "longdoc/anthropic") == "second-value"


def test_env_var_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given no secret name and the env var set
    monkeypatch.setenv(ENV_VAR, f"  {FAKE_KEY}  ")
    # When the key is read
    # Then the env var's stripped value is returned
    assert api_key(ENV_VAR, None) == FAKE_KEY
    assert api_key(ENV_VAR, "") == FAKE_KEY


@pytest.mark.parametrize("value", [None, "", "   "])
def test_missing_or_empty_env_var_raises(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    # Given the env var unset or blank
    if value is not None:
        monkeypatch.setenv(ENV_VAR, value)
    # When the key is read, Then ConfigError names the variable
    with pytest.raises(ConfigError, match=ENV_VAR):
        api_key(ENV_VAR, None)


def test_missing_secret_raises_config_error(secretsmanager) -> None:
    # Given no such secret
    # When the key is read, Then ConfigError names the secret and the variable
    with pytest.raises(ConfigError) as caught:
        api_key(ENV_VAR, "longdoc/absent")
    assert "longdoc/absent" in str(caught.value)
    assert ENV_VAR in str(caught.value)
    assert caught.value.__cause__ is not None


@pytest.mark.parametrize(
    "secret_string",
    [
        json.dumps({"key": FAKE_KEY}),  # wrong field
        json.dumps({"api_key": ""}),  # empty field
        "{not json " + FAKE_KEY,  # broken JSON
        "   ",  # blank
    ],
)
def test_unusable_secret_raises_without_leaking(secretsmanager, secret_string: str) -> None:
    # Given a secret that holds no usable key
    secretsmanager.create_secret(Name="longdoc/bad", SecretString=secret_string)
    # When the key is read
    with pytest.raises(ConfigError) as caught:
        api_key(ENV_VAR, "longdoc/bad")
    # Then the error names the secret but never echoes its content
    message = str(caught.value)
    assert "longdoc/bad" in message
    assert FAKE_KEY not in message
