"""The one greedy packer behind Voyage batches, Pinecone upserts, Message Batches and summary groups."""

from __future__ import annotations

from longdoc.core.batching import pack


def test_batches_close_on_count_cost_or_the_callers_rule() -> None:
    # Given items with costs / When packed under 3 items and 10 cost units / Then batches close at either cap
    assert list(pack([4, 4, 4, 1, 1, 1, 1], int, max_items=3, max_cost=10)) == [[4, 4], [4, 1, 1], [1, 1]]
    # And an item alone over the cap still gets a batch of its own
    assert list(pack([12, 1], int, max_cost=10)) == [[12], [1]]
    # And the caller's own rule starts a batch before an item
    assert list(pack("aabbb", lambda _: 1, split_before=lambda cur, _t, item: item != cur[-1])) == [
        ["a", "a"], ["b", "b", "b"]]
    assert list(pack([], int)) == []
