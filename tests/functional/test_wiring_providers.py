"""What ``wiring`` builds in AWS mode for each model provider (issue 11): Claude on the Anthropic
API with a key source, Claude on Bedrock with no key at all, the Voyage REST embedder, and the
reranker ``LONGDOC_RERANKER`` chooses (issue 13), also in local mode."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from longdoc import wiring
from longdoc.adapters.claude import ClaudeModel
from longdoc.adapters.secrets import SecretKey
from longdoc.adapters.voyage_http import VoyageHttpEmbedder
from longdoc.adapters.voyage_rerank import VoyageReranker
from longdoc.core.errors import ConfigError
from longdoc.extract.retrieve import NoRerank
from longdoc.core.messages import Message, ModelRequest
from tests.fakes.anthropic_server import message_reply, text_block
from tests.fakes.bedrock_server import FakeBedrock

BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.fixture
def aws_mode(fake_aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """AWS-mode settings as the template sets them for the extract function, no secret reachable."""
    for name, value in {"LONGDOC_MODE": "aws", "LONGDOC_BUCKET": "b", "LONGDOC_TABLE": "t", "LONGDOC_MODEL": "claude",
                        "LONGDOC_VOYAGE_SECRET_NAME": "longdoc/voyage"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LONGDOC_ANTHROPIC_SECRET_NAME", raising=False)
    wiring.reset()
    yield monkeypatch
    wiring.reset()


def test_bedrock_provider_builds_a_keyless_bedrock_client(aws_mode: pytest.MonkeyPatch) -> None:
    # Given ModelProvider=bedrock (no Anthropic secret exists), and Bedrock's endpoint at a fake
    from anthropic.lib.aws import _auth

    _auth._get_session.cache_clear()
    aws_mode.setenv("LONGDOC_MODEL_PROVIDER", "bedrock")
    aws_mode.setenv("LONGDOC_CLAUDE_MODEL", BEDROCK_MODEL)
    with FakeBedrock() as fake:
        aws_mode.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake.base_url)
        fake.enqueue(message_reply([text_block("ok")]))
        # When the wiring builds the model and it is called
        model = wiring.model()
        response = model.create(ModelRequest(system=[], tools=[], max_tokens=64,
                                             messages=[Message(role="user", content=[{"type": "text", "text": "hi"}])]))
    _auth._get_session.cache_clear()
    # Then it is Claude on Bedrock, named by the Bedrock id, signed with the role's credentials
    assert isinstance(model, ClaudeModel) and (model.provider, model.name) == ("bedrock", BEDROCK_MODEL)
    assert wiring.model_name() == BEDROCK_MODEL
    assert response.stop_reason == "end_turn" and fake.invoked_models == [BEDROCK_MODEL]


def test_anthropic_provider_reads_its_key_through_a_key_source(aws_mode: pytest.MonkeyPatch) -> None:
    # Given ModelProvider=anthropic with the key's secret name, and the secret's value
    aws_mode.setenv("LONGDOC_MODEL_PROVIDER", "anthropic")
    aws_mode.setenv("LONGDOC_ANTHROPIC_SECRET_NAME", "longdoc/anthropic")
    reads: list[tuple[str, str | None, bool]] = []

    def fake_api_key(env_var: str, secret_name: str | None, *, refresh: bool = False) -> str:
        reads.append((env_var, secret_name, refresh))
        return "test-key-not-real"

    aws_mode.setattr("longdoc.adapters.secrets.api_key", fake_api_key)
    # When the wiring builds the model
    model = wiring.model()
    # Then the key comes from a SecretKey on that secret (so a rotated key reaches this client)
    assert isinstance(model, ClaudeModel) and model.provider == "anthropic"
    assert isinstance(model._key_source, SecretKey)
    assert reads == [("ANTHROPIC_API_KEY", "longdoc/anthropic", False)]


def test_aws_embedder_is_the_voyage_rest_client_with_a_key_source(aws_mode: pytest.MonkeyPatch) -> None:
    # Given AWS mode, When the wiring builds the embedder (no request is made yet)
    embedder = wiring.embedder()
    # Then it is the REST embedder (no voyageai SDK in the functions) reading the Voyage secret
    assert isinstance(embedder, VoyageHttpEmbedder)
    assert isinstance(embedder._rest.key_source, SecretKey) and embedder._rest.key_source.secret_name == "longdoc/voyage"


def test_aws_reranker_is_off_by_default(aws_mode: pytest.MonkeyPatch) -> None:
    # Given AWS mode without LONGDOC_RERANKER, When the wiring builds the reranker
    aws_mode.delenv("LONGDOC_RERANKER", raising=False)
    # Then it keeps the fused order and calls nothing
    assert isinstance(wiring.reranker(), NoRerank)


def test_aws_reranker_voyage_reads_the_voyage_secret_and_the_model_setting(aws_mode: pytest.MonkeyPatch) -> None:
    # Given LONGDOC_RERANKER=voyage and a rerank model, as the template's Reranker parameters set them
    aws_mode.setenv("LONGDOC_RERANKER", "voyage")
    aws_mode.setenv("LONGDOC_RERANK_MODEL", "rerank-2.5-lite")
    # When the wiring builds the reranker (no request is made yet)
    reranker = wiring.reranker()
    # Then it is the Voyage REST reranker with that model, reading the key from the Voyage secret
    assert isinstance(reranker, VoyageReranker) and reranker.name == "rerank-2.5-lite"
    source = reranker._rest.key_source
    assert isinstance(source, SecretKey) and (source.env_var, source.secret_name) == ("VOYAGE_API_KEY", "longdoc/voyage")


def test_an_unknown_reranker_is_a_config_error_naming_the_variable(aws_mode: pytest.MonkeyPatch) -> None:
    # Given a reranker the settings do not know, When the wiring builds it, Then the variable is named
    aws_mode.setenv("LONGDOC_RERANKER", "cohere")
    with pytest.raises(ConfigError, match="LONGDOC_RERANKER"):
        wiring.reranker()


@pytest.fixture
def local_mode(monkeypatch: pytest.MonkeyPatch, tmp_path) -> Iterator[pytest.MonkeyPatch]:  # type: ignore[no-untyped-def]
    """Local-mode settings with no Voyage key in the environment."""
    monkeypatch.setenv("LONGDOC_MODE", "local")
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path))
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    monkeypatch.delenv("LONGDOC_RERANKER", raising=False)
    wiring.reset()
    yield monkeypatch
    wiring.reset()


def test_local_reranker_stays_offline_by_default_and_voyage_needs_a_key(local_mode: pytest.MonkeyPatch) -> None:
    # Given local mode without a Voyage key, When nothing is chosen, Then no reranker calls out
    assert isinstance(wiring.reranker(), NoRerank)
    # When voyage is chosen without a key, Then the wiring says which variable is missing
    local_mode.setenv("LONGDOC_RERANKER", "voyage")
    wiring.reset()
    with pytest.raises(ConfigError, match="VOYAGE_API_KEY"):
        wiring.reranker()
    # When the key is set, Then the Voyage reranker reads it from the environment (no secret)
    local_mode.setenv("VOYAGE_API_KEY", "pa-local-not-real")
    wiring.reset()
    reranker = wiring.reranker()
    assert isinstance(reranker, VoyageReranker) and reranker.name == "rerank-2.5"
    assert reranker._rest.key_source.secret_name is None and reranker._rest.key_source() == "pa-local-not-real"
    # And the session's adapters carry that same reranker
    assert wiring.deps().reranker is reranker


def test_budgets_are_counted_with_claude_and_estimated_offline(aws_mode: pytest.MonkeyPatch,
                                                               tmp_path: object) -> None:
    # Given Claude on the Anthropic API with a key in the environment
    from longdoc.adapters.claude_count import ClaudeTokenCounter

    aws_mode.setenv("LONGDOC_MODE", "local")
    aws_mode.setenv("LONGDOC_HOME", str(tmp_path))
    aws_mode.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
    wiring.reset()
    # When the extraction, summary and triage dependencies are built
    # Then their token budgets use the counting endpoint (one counter, shared)
    counter = wiring.deps().tokens
    assert isinstance(counter, ClaudeTokenCounter)
    assert wiring.triage_deps(offline_ranking=True).tokens is counter
    # And with the offline baseline no counter is wired: budgets keep the plain estimate
    aws_mode.setenv("LONGDOC_MODEL", "baseline")
    wiring.reset()
    assert wiring.deps().tokens is None and wiring.triage_deps(offline_ranking=True).tokens is None


def test_the_triage_query_writer_setting_reaches_the_triage_deps(aws_mode: pytest.MonkeyPatch,
                                                                 tmp_path: object) -> None:
    # Given local mode with a Claude key and no query-writer setting
    aws_mode.setenv("LONGDOC_MODE", "local")
    aws_mode.setenv("LONGDOC_HOME", str(tmp_path))
    aws_mode.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
    wiring.reset()
    # Then the step is off by default
    assert wiring.triage_deps(offline_ranking=True).query_writer is False
    # When LONGDOC_TRIAGE_QUERY_WRITER=model, Then triage gets the writer and the Claude model to write with
    aws_mode.setenv("LONGDOC_TRIAGE_QUERY_WRITER", "model")
    wiring.reset()
    deps = wiring.triage_deps(offline_ranking=True)
    assert deps.query_writer is True and deps.model is not None and deps.model.name == "claude-sonnet-5-5"
    # And a value other than off/model is refused naming the variable
    aws_mode.setenv("LONGDOC_TRIAGE_QUERY_WRITER", "sometimes")
    wiring.reset()
    with pytest.raises(ConfigError, match="LONGDOC_TRIAGE_QUERY_WRITER"):
        wiring.triage_deps(offline_ranking=True)
