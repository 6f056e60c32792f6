"""The default models come from ids a page documents, and the template and docs agree with them.

A default that a page does not document (an id the capability table marks ``assumed``) could be
refused by the provider on the first call of a fresh stack; the template's parameters and
``docs/deploy.md`` name the same ids as :data:`longdoc.core.model_defaults.DEFAULT_MODELS`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from longdoc import wiring
from longdoc.config import ExtractFunctionSettings
from longdoc.core.model_defaults import DEFAULT_MODELS
from longdoc.core.models_catalogue import rows, spec_for

ROOT = Path(__file__).resolve().parents[3]


class _CfnLoader(yaml.SafeLoader):
    """YAML loader that reads CloudFormation short-form tags (!Ref, !Sub, ...) as plain values."""


_CfnLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


@pytest.mark.parametrize("provider", sorted(DEFAULT_MODELS))
def test_each_default_is_a_documented_row_id_not_an_assumed_one(provider: str) -> None:
    # Given the provider's default model
    model = DEFAULT_MODELS[provider]
    # Then it is a row's own id (not an alias) on that provider, with a source page and no assumed id
    row = spec_for(model, provider)
    assert row is not None and row.id == model and row.provider == provider
    assert row.sources.get("id") and "id" not in row.assumed


def test_the_bedrock_default_is_the_foundation_model_id_the_messages_endpoint_documents() -> None:
    assert DEFAULT_MODELS["bedrock"] == "anthropic.claude-sonnet-5-5"
    # And no Bedrock row offers strict tool use (BEDROCK page: structured outputs not supported)
    assert [r.id for r in rows("bedrock") if r.strict_tools] == []
    assert all(r.strict_tools for r in rows("anthropic"))


def test_the_template_and_the_deploy_guide_name_the_same_defaults() -> None:
    template = yaml.load((ROOT / "template.yaml").read_text(encoding="utf-8"), Loader=_CfnLoader)
    params = template["Parameters"]
    assert params["ClaudeModel"]["Default"] == DEFAULT_MODELS["anthropic"]
    assert params["BedrockModelId"]["Default"] == DEFAULT_MODELS["bedrock"]
    assert params["BedrockFoundationModelId"]["Default"] == DEFAULT_MODELS["bedrock"]
    guide = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    assert f"| `BedrockModelId` | `{DEFAULT_MODELS['bedrock']}` |" in guide
    assert f"| `ClaudeModel` | `{DEFAULT_MODELS['anthropic']}` |" in guide


@pytest.mark.parametrize(("provider", "model", "strict"), [
    ("anthropic", "claude-sonnet-5-5", True),
    ("bedrock", "anthropic.claude-sonnet-5-5", False),
    ("bedrock", "global.anthropic.claude-sonnet-5-5", False),
    ("bedrock", "us.anthropic.claude-haiku-4-5-20251001-v1:0", False),
])
def test_session_options_ask_for_strict_tools_only_where_the_endpoint_supports_them(
        monkeypatch: pytest.MonkeyPatch, provider: str, model: str, strict: bool) -> None:
    # Given the extract function's settings for a provider and model (strict tools on by default)
    monkeypatch.setenv("LONGDOC_MODEL_PROVIDER", provider)
    monkeypatch.setenv("LONGDOC_CLAUDE_MODEL", model)
    settings = ExtractFunctionSettings()
    assert settings.strict_tools is True
    # When the session options are composed, Then strict tools are asked for only on the Anthropic API
    assert wiring.session_options(settings).strict_tools is strict
