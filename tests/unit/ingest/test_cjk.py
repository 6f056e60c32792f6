"""CJK text: one token per Han/Kana/Hangul character, and 。！？ end a sentence without a space."""

from __future__ import annotations

import math

import pytest

from longdoc.core.text import split_sentences
from longdoc.core.tokens import estimate_tokens, weighted_chars
from longdoc.ingest.chunk.oversize import Cut, cut_long_sentence
from longdoc.ingest.pipeline import chunk_bytes

HAN = "甲乙方应当按照合同约定支付租金并承担违约责任"  # 22 distinct-enough Han characters


def cjk_sentences(count: int) -> str:
    """``count`` sentences of 19 Han characters and a ``。`` (20 characters each), no spaces."""
    return "".join("".join(HAN[(i + j) % len(HAN)] for j in range(19)) + "。" for i in range(count))


@pytest.mark.parametrize(("text", "tokens"), [
    ("", 0),
    ("abcd", 1),
    ("abcde", 2),
    ("The tenant shall pay rent.", 7),  # 26 chars -> ceil(26 / 4)
    ("café", 1),  # non-CJK non-ASCII keeps 4 chars per token
])
def test_text_without_cjk_keeps_four_characters_per_token(text: str, tokens: int) -> None:
    # Given text with no CJK character
    # When its tokens are estimated
    # Then the count is ceil(len / 4), as before, and its weighted length is its length
    assert estimate_tokens(text) == tokens == math.ceil(len(text) / 4)
    assert weighted_chars(text) == len(text)


@pytest.mark.parametrize(("text", "tokens"), [
    ("甲方应当支付租金。", 9),  # Han + 。
    ("ひらがなカタカナ", 8),  # Hiragana, Katakana
    ("한국어", 3),  # Hangul syllables
    ("「合同」；第一条：", 9),  # CJK brackets and full-width ；：
])
def test_every_cjk_character_is_one_token(text: str, tokens: int) -> None:
    # Given text made only of CJK characters and CJK punctuation
    # When its tokens are estimated
    # Then each character counts one token (the old rule gave a quarter of that)
    assert estimate_tokens(text) == tokens == len(text)


def test_mixed_text_counts_cjk_one_each_and_the_rest_four_per_token() -> None:
    # Given 4 CJK characters around 10 other characters (" rent 100 ")
    text = "租金 rent 100 元。"
    # When its tokens are estimated
    # Then 4 + ceil(10 / 4) = 7, and its weighted length is 4 x 4 + 10 = 26
    assert estimate_tokens(text) == 7
    assert weighted_chars(text) == 26


def test_cjk_stops_end_sentences_without_a_following_space() -> None:
    # Given Chinese sentences with no spaces, a quoted one, a full-width number and English after
    text = "甲方应付款。乙方应交货！是否？他说：「第１．２条适用。」See A. Smith. Next one."
    # When split into sentences
    got = [text[a:b] for a, b in split_sentences(text)]
    # Then 。！？ end sentences (closing 」 kept), "１．２" does not, and English rules are unchanged
    assert got == ["甲方应付款。", "乙方应交货！", "是否？", "他说：「第１．２条适用。」", "See A. Smith.", "Next one."]


def test_chinese_sentences_chunk_like_english_with_no_chunk_oversize() -> None:
    # Given 500 Chinese sentences of 20 characters (20 tokens each, 10,000 in all) in one paragraph
    text = cjk_sentences(500)
    assert estimate_tokens(text) == 10_000
    # When chunked at the defaults (target 1,000, max 2,000 tokens, overlap 0.15)
    chunks = chunk_bytes("cjk.txt", text.encode())
    # Then it makes 10 chunks (before: 1 chunk of 10,000 chars flagged oversize, "2,500" tokens)
    assert len(chunks) == 10
    assert not any(c.oversize or c.overlap_missing for c in chunks)
    # each ending at a 。 on a 1,000-character (= 1,000-token) grid,
    assert [c.char_end for c in chunks] == [1000 * k for k in range(1, 11)]
    assert all(c.text.endswith("。") for c in chunks)
    # the continuations opening with 7 whole sentences (140 tokens, within 15 % of 1,000)
    assert [c.overlap_chars for c in chunks] == [0] + [140] * 9
    assert [c.token_count for c in chunks] == [1000] + [1140] * 9


def test_a_cjk_run_with_no_mark_is_cut_into_pieces_within_max_tokens() -> None:
    # Given 1,000 Han characters with no punctuation at all (1,000 tokens)
    text = (HAN * 50)[:1000]
    # When cut for max_tokens = 100 (cut above 200)
    pieces = cut_long_sentence(text, 0, len(text), 100)
    # Then it is 10 cuts of exactly 100 characters = 100 tokens (before: 3 of 400, 400, 200)
    assert all(isinstance(p, Cut) for p in pieces)
    assert [(a, b) for a, b in pieces] == [(k, k + 100) for k in range(0, 1000, 100)]
    assert max(estimate_tokens(text[a:b]) for a, b in pieces) == 100
