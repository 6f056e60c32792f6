"""The reduce contract: every reduce call within its input budget, every level shrinking, a bounded depth.

Rules (ours; issue 28):

* **budget per call**: a reduce batch holds at most ``budget`` tokens of partials
  (:func:`partial_tokens`, the estimate of the statement lines the reduce prompt renders). A
  partial larger than the budget on its own is split into consecutive pieces of whole
  statements (:func:`split_oversized`), never dropped or cut; a single statement over the
  budget is an error (:class:`~longdoc.core.errors.ReduceNotConverging`), not a cut.
* **each input consumed exactly once**: :func:`check_consumed` asserts that the batches of a
  level hold every piece of the level exactly once and carry every group of it.
* **shrink**: a level must bring the total down to at most :data:`MIN_SHRINK` of the level
  before it. A level that did not is followed by pairwise batches (at most two partials a
  call: smaller inputs the model can condense); when that level does not shrink either, the run
  fails with a clear :class:`~longdoc.core.errors.ReduceNotConverging` instead of looping.
* **bounded depth**: at most :func:`max_levels` reduce levels, ``ceil(log_fanin(groups)) + 1``
  where the fan-in is how many map partials fit one call (at least 2); past it, the same error.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from longdoc.core.errors import ReduceNotConverging
from longdoc.core.tokens import estimate_tokens
from longdoc.summarize.models import Partial
from longdoc.summarize.prompt import statement_line

MIN_SHRINK = 0.8
"""A reduce level must bring the partials' total tokens to at most 80% of the level before it."""
PARTIAL_OVERHEAD_TOKENS = 20
"""Tokens a partial's frame takes in the reduce prompt (its ``PARTIAL n`` header and separators)."""


def partial_tokens(partial: Partial) -> int:
    """Estimated input tokens of ``partial`` in a reduce or final prompt (statement lines + frame)."""
    return sum(estimate_tokens(statement_line(s)) + 1 for s in partial.statements) + PARTIAL_OVERHEAD_TOKENS


def total_tokens(partials: Sequence[Partial]) -> int:
    """Estimated input tokens of ``partials`` together."""
    return sum(map(partial_tokens, partials))


def split_oversized(partials: Sequence[Partial], budget: int) -> list[Partial]:
    """``partials`` with each one over ``budget`` tokens split into consecutive pieces of whole
    statements, each within the budget (keys ``<key>~<n>``; every piece carries the partial's
    groups and lost groups). Raises :class:`ReduceNotConverging` when one statement alone is over it."""
    out: list[Partial] = []
    for partial in partials:
        if partial_tokens(partial) <= budget:
            out.append(partial)
            continue
        pieces: list[list] = [[]]
        for statement in partial.statements:
            alone = partial_tokens(partial.model_copy(update={"statements": [statement]}))
            if alone > budget:
                raise ReduceNotConverging(f"{partial.key}: one statement takes {alone} tokens, over the "
                                          f"{budget}-token reduce input budget")
            trial = partial.model_copy(update={"statements": [*pieces[-1], statement]})
            if pieces[-1] and partial_tokens(trial) > budget:
                pieces.append([statement])
            else:
                pieces[-1].append(statement)
        out += [partial.model_copy(update={"key": f"{partial.key}~{n}", "statements": piece})
                for n, piece in enumerate(pieces)]
    return out


def make_batches(pieces: Sequence[Partial], budget: int, pairwise: bool = False) -> list[list[Partial]]:
    """Consecutive ``pieces`` (each within ``budget``, :func:`split_oversized`) packed into
    batches of at most ``budget`` tokens (at most two pieces per batch when ``pairwise``)."""
    batches: list[list[Partial]] = []
    for piece in pieces:
        last = batches[-1] if batches else None
        if last is not None and total_tokens(last) + partial_tokens(piece) <= budget and not (pairwise and len(last) >= 2):
            last.append(piece)
        else:
            batches.append([piece])
    return batches


def check_consumed(pieces: Sequence[Partial], batches: Sequence[Sequence[Partial]]) -> None:
    """Assert every piece of the level is in exactly one batch and no group is lost by the batching.

    Raises ``AssertionError`` (a harness bug, never the model's) naming what went wrong."""
    used = Counter(p.key for batch in batches for p in batch)
    wanted = Counter(p.key for p in pieces)
    assert used == wanted, f"reduce batches consume {dict(used - wanted)} extra and miss {dict(wanted - used)}"
    groups_in = {g for p in pieces for g in [*p.groups, *p.lost]}
    groups_out = {g for batch in batches for p in batch for g in [*p.groups, *p.lost]}
    assert groups_in == groups_out, f"reduce batches lose groups {sorted(groups_in - groups_out)}"


def max_levels(map_partials: Sequence[Partial], groups: int, budget: int) -> int:
    """The most reduce levels a summary of ``groups`` map groups may take: ``ceil(log_fanin(groups)) + 1``,
    the fan-in being how many map partials of the mean size fit ``budget`` tokens (at least 2)."""
    mean = max(1, total_tokens(map_partials) // max(1, len(map_partials)))
    fanin = max(2, budget // mean)
    return math.ceil(math.log(max(groups, 2)) / math.log(fanin)) + 1


def shrank(before: int, after: int) -> bool:
    """Whether a level brought ``before`` tokens down to ``after`` by at least the minimum factor."""
    return after <= MIN_SHRINK * before
