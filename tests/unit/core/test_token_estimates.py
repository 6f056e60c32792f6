"""The per-model calibrated token estimate (issue 25, item 4): the offline default is unchanged."""

from __future__ import annotations

import math

from longdoc.core.ports import TokenCounter
from longdoc.core.tokens import EstimatedTokens, estimate_tokens

TEXT = "Either party may terminate this Agreement upon thirty (30) days' written notice. " * 10


def test_without_a_model_the_estimate_is_the_four_characters_rule() -> None:
    # Given English text, Then the default estimate (the offline demo's) is ceil(len / 4), as before
    assert estimate_tokens(TEXT) == math.ceil(len(TEXT) / 4) == EstimatedTokens().count_text(TEXT)
    assert estimate_tokens(TEXT, "offline-extractive-baseline-v1") == estimate_tokens(TEXT)


def test_a_5x_model_uses_its_rows_characters_per_token() -> None:
    # Given Sonnet 5.5 (3.1 characters per token in the table: about 30 % more tokens, S5-MIG)
    # Then the estimate is ceil(len / 3.1), and Haiku 4.5's older tokenizer keeps 4.0
    assert estimate_tokens(TEXT, "claude-sonnet-5-5") == math.ceil(len(TEXT) / 3.1)
    assert estimate_tokens(TEXT, "claude-haiku-4-5") == math.ceil(len(TEXT) / 4)
    assert estimate_tokens(TEXT, "claude-sonnet-5-5") > 1.25 * estimate_tokens(TEXT)


def test_cjk_characters_count_one_token_each_for_every_model() -> None:
    text = "本契約は日本法に準拠する。" + "abc" * 31
    assert estimate_tokens(text, "claude-sonnet-5-5") == 13 + math.ceil(93 / 3.1)


def test_the_estimate_is_a_token_counter() -> None:
    assert isinstance(EstimatedTokens("claude-sonnet-5-5"), TokenCounter)
