"""Every result names the provider that served its model (issue 11, Claude on Amazon Bedrock)."""

from __future__ import annotations

import pytest

from longdoc.adapters.baseline import BASELINE_NAME
from longdoc.core.models_catalogue import rows
from longdoc.extract.runs import model_provider


@pytest.mark.parametrize(("model", "provider"), [
    ("claude-sonnet-5-5", "anthropic"),
    ("claude-sonnet-4-5-20250929", "anthropic"),
    ("anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock"),
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock"),
    ("global.anthropic.claude-haiku-4-5-20251001-v1:0", "bedrock"),
    ("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123", "bedrock"),
    (BASELINE_NAME, "offline"),
])
def test_model_ids_name_their_provider(model: str, provider: str) -> None:
    # Given a model id, When its provider is named, Then it is the one that serves such ids
    assert model_provider(model) == provider


def test_every_id_of_the_capability_table_names_the_provider_its_row_is_under() -> None:
    # Given the capability table's rows, Then model_provider agrees with each row's provider for every id
    for row in rows():
        assert {model_provider(m) for m in row.ids()} == {row.provider}, row.id
