"""Key rotation reaches warm functions (issue 11, finding 4).

A rotated Anthropic key must reach a warm execution environment without a cold start: the
secret is cached for 5 minutes (:data:`longdoc.adapters.secrets.SECRET_MAX_AGE_SECONDS`), and
the SDK client built from it is rebuilt when the key changes; an authentication error reads
the secret again, bypassing the cache, and retries once. The real SDK talks to the loopback
fake of the Messages API; Secrets Manager is moto.
"""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from longdoc.adapters.claude import ClaudeModel
from longdoc.adapters.secrets import SecretKey
from longdoc.core.errors import ModelRequestError
from longdoc.core.messages import Message, ModelRequest
from tests.fakes.anthropic_server import FakeAnthropic, enable_streaming, error_reply, message_reply, text_block

OLD_KEY = "test-key-old-not-real"
NEW_KEY = "test-key-new-not-real"


class Rotating:
    """A key source whose cached value lags behind the secret until refreshed (like Powertools' cache)."""

    def __init__(self, cached: str, current: str) -> None:
        self.cached, self.current, self.refreshes = cached, current, 0

    def __call__(self, *, refresh: bool = False) -> str:
        if refresh:
            self.refreshes += 1
            self.cached = self.current
        return self.cached


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def _request() -> ModelRequest:
    return ModelRequest(system=[], tools=[], max_tokens=64,
                        messages=[Message(role="user", content=[{"type": "text", "text": "hi"}])])


def test_a_new_key_from_the_source_rebuilds_the_client(fake: FakeAnthropic) -> None:
    # Given a warm model whose key source starts returning a rotated key (the cache expired)
    source = Rotating(OLD_KEY, OLD_KEY)
    model = ClaudeModel(source, "claude-x", base_url=fake.base_url, max_retries=0)
    fake.enqueue(message_reply([text_block("one")]), message_reply([text_block("two")]))
    model.create(_request())
    source.cached = source.current = NEW_KEY
    # When it is called again
    model.create(_request())
    # Then the second request carries the new key: the client was rebuilt, not reused
    assert [r.api_key for r in fake.requests] == [OLD_KEY, NEW_KEY]
    assert NEW_KEY not in repr(model) and OLD_KEY not in repr(model)


def test_a_streamed_call_uses_the_rotated_key_too(fake: FakeAnthropic) -> None:
    # Given a warm model (the summaries' streamed synthesis) whose key source starts returning a
    # rotated key after its first call
    enable_streaming(fake)
    source = Rotating(OLD_KEY, OLD_KEY)
    model = ClaudeModel(source, "claude-x", base_url=fake.base_url, max_retries=0)
    fake.enqueue(message_reply([text_block("one")]), message_reply([text_block("two")]))
    model.create(_request())
    source.cached = source.current = NEW_KEY
    # When it streams the next call
    streamed: list[str] = []
    model.stream(_request(), streamed.append)
    # Then the streamed request carries the new key, as a create would
    assert [r.api_key for r in fake.requests] == [OLD_KEY, NEW_KEY] and "".join(streamed) == "two"


def test_an_authentication_error_refetches_the_key_and_retries_once(fake: FakeAnthropic) -> None:
    # Given a revoked cached key while the secret already holds the new one
    source = Rotating(OLD_KEY, NEW_KEY)
    model = ClaudeModel(source, "claude-x", base_url=fake.base_url, max_retries=0)
    fake.enqueue(error_reply(401, "invalid x-api-key"), message_reply([text_block("ok")]))
    # When the model is called
    response = model.create(_request())
    # Then the 401 made it read the secret again (bypassing the cache) and retry with the new key
    assert response.stop_reason == "end_turn"
    assert [r.api_key for r in fake.requests] == [OLD_KEY, NEW_KEY]
    assert source.refreshes == 1


@pytest.mark.parametrize("second", [None, "rejected again"])
def test_an_unchanged_or_rejected_key_is_a_request_error(fake: FakeAnthropic, second: str | None) -> None:
    # Given a key the API rejects: unchanged in the secret, or replaced by another rejected one
    source = Rotating(OLD_KEY, OLD_KEY if second is None else NEW_KEY)
    model = ClaudeModel(source, "claude-x", base_url=fake.base_url, max_retries=0)
    fake.enqueue(error_reply(401, "invalid x-api-key"), error_reply(401, "invalid x-api-key"))
    # When the model is called, Then it fails as a request error after at most one retry
    with pytest.raises(ModelRequestError, match="401 authentication_error"):
        model.create(_request())
    assert len(fake.requests) == (1 if second is None else 2)


def test_secret_key_serves_the_cached_value_until_refreshed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a secret read once (now cached), then rotated in Secrets Manager
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    parameters.clear_caches()
    with mock_aws():
        client = boto3.client("secretsmanager", region_name="us-east-1")
        client.create_secret(Name="longdoc/anthropic", SecretString=OLD_KEY)
        source = SecretKey("ANTHROPIC_API_KEY", "longdoc/anthropic")
        assert source() == OLD_KEY
        client.put_secret_value(SecretId="longdoc/anthropic", SecretString=NEW_KEY)
        # When it is asked again, normally and with refresh
        cached = source()
        fresh = source(refresh=True)
        after = source()
    parameters.clear_caches()
    # Then the cache serves the old value until a refresh, which reads and re-caches the new one
    assert (cached, fresh, after) == (OLD_KEY, NEW_KEY, NEW_KEY)
    assert "not-real" not in repr(source)
