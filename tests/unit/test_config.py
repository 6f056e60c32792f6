"""Per-function settings: validated once, failing with the variable named."""

from __future__ import annotations

import pytest

from longdoc.config import ApiFunctionSettings, IngestFunctionSettings, Settings, function_settings
from longdoc.core.errors import ConfigError


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    for name in ("LONGDOC_MODE", "LONGDOC_BUCKET", "LONGDOC_TABLE", "LONGDOC_STATE_MACHINE_ARN", "LONGDOC_TOP_K"):
        monkeypatch.delenv(name, raising=False)
    function_settings.cache_clear()
    yield
    function_settings.cache_clear()


def test_the_api_function_on_aws_names_its_missing_state_machine_variable(monkeypatch) -> None:
    # Given an AWS environment with the stores but no state machine ARN
    monkeypatch.setenv("LONGDOC_MODE", "aws")
    monkeypatch.setenv("LONGDOC_BUCKET", "b")
    monkeypatch.setenv("LONGDOC_TABLE", "t")
    # When the API function validates its settings
    with pytest.raises(ConfigError) as err:
        function_settings(ApiFunctionSettings)
    # Then the error names the variable; the ingest function, which does not need it, is fine
    assert "LONGDOC_STATE_MACHINE_ARN must be set when LONGDOC_MODE=aws" in str(err.value)
    assert function_settings(IngestFunctionSettings).bucket == "b"


def test_a_malformed_value_is_named_with_its_variable(monkeypatch) -> None:
    # Given a top-K outside its bounds
    monkeypatch.setenv("LONGDOC_TOP_K", "0")
    # When the settings are read
    with pytest.raises(ConfigError) as err:
        function_settings(Settings)
    # Then the message names LONGDOC_TOP_K
    assert "LONGDOC_TOP_K" in str(err.value)


def test_each_function_model_holds_only_its_own_groups() -> None:
    # Given the function models / When their fields are listed / Then the API carries no chunking or index fields
    api = set(ApiFunctionSettings.model_fields)
    assert "state_machine_arn" in api and "chunk_target_tokens" not in api and "pinecone_index_host" not in api
    assert "state_machine_arn" not in IngestFunctionSettings.model_fields
