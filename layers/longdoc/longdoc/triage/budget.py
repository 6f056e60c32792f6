"""The input budget read backwards from the cost line, and the bands of one prompt against it.

The design's rule: a claim may cost ``cost`` (currency units); the answer's reserved output
tokens cost ``reserve x output_price / 1e6``; what is left buys input tokens at
``input_price / 1e6`` each::

    input_budget = floor((cost - reserve x output_price / 1e6) x 1e6 / input_price)

Prices are per million tokens, in the cost line's currency (USD for our price table). The
design's example: 0.005 per claim, 160 output tokens at 4 per million, input at 1 per
million: ``(0.005 - 0.00064) x 1e6 / 1 = 4,360`` input tokens. Decimal arithmetic, so no
binary rounding can take a token off a budget that divides exactly.

The clause band is at most :data:`CLAUSE_BAND_TOKENS` (three clauses of up to 400) and never
more than what the fixed bands (instructions, examples, claim, task) leave of the budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from longdoc.core.errors import TriageError

CLAUSE_BAND_TOKENS = 1200
"""Largest clause band, in estimated tokens: three clauses of up to 400 (the design's figure)."""
RESERVED_OUTPUT_TOKENS = 160
"""Output tokens reserved for the answer's tool call (the design's figure); the call's ``max_tokens``."""
DEFAULT_INPUT_BUDGET = 4360
"""Input budget without ``--budget-tokens`` or ``--cost-line``: the design's example cost line."""
_MILLION = Decimal(1_000_000)
_NAMES = ("cost", "input", "output", "reserve")


@dataclass(frozen=True)
class CostLine:
    """A cost line: ``cost`` per claim, ``input_price`` / ``output_price`` per million tokens, ``reserve`` output tokens."""

    cost: Decimal
    input_price: Decimal
    output_price: Decimal
    reserve: int

    def input_budget(self) -> int:
        """Input tokens the cost line buys (formula in the module docstring), rounded down.

        Raises :class:`TriageError` when the input price is not positive or the reserved
        output alone costs more than the claim may.
        """
        if self.input_price <= 0:
            raise TriageError("cost line: the input price must be positive", "budget")
        left = self.cost - self.reserve * self.output_price / _MILLION
        if left <= 0:
            raise TriageError(f"cost line: {self.reserve} reserved output tokens at {self.output_price} per million "
                              f"cost {self.reserve * self.output_price / _MILLION}, nothing is left of {self.cost} "
                              "for input", "budget")
        return math.floor(left * _MILLION / self.input_price)

    def cost_of(self, input_tokens: int) -> Decimal:
        """What ``input_tokens`` plus the reserved output cost at this line's prices."""
        return (input_tokens * self.input_price + self.reserve * self.output_price) / _MILLION


def parse_cost_line(text: str) -> CostLine:
    """``"0.005,1,4,160"`` or ``"cost=0.005,input=1,output=4,reserve=160"`` (any order with names).

    Positional order: cost per claim, input price per million tokens, output price per
    million, reserved output tokens. Raises :class:`TriageError` naming what is wrong.
    """
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if len(parts) != 4:
        raise TriageError(f"cost line needs 4 values (cost,input_price,output_price,reserve_tokens), got {text!r}",
                          "budget")
    named = dict(p.split("=", 1) for p in parts) if all("=" in p for p in parts) else dict(zip(_NAMES, parts, strict=True))
    named = {k.strip().lower(): v.strip() for k, v in named.items()}
    if set(named) != set(_NAMES):
        raise TriageError(f"cost line names must be {', '.join(_NAMES)}, got {', '.join(sorted(named))}", "budget")
    try:
        values = {k: Decimal(v) for k, v in named.items()}
    except InvalidOperation:
        raise TriageError(f"cost line values must be numbers, got {text!r}", "budget") from None
    if any(not v.is_finite() or v < 0 for v in values.values()) or values["reserve"] != int(values["reserve"]):
        raise TriageError(f"cost line values must be non-negative (reserve a whole number), got {text!r}", "budget")
    return CostLine(values["cost"], values["input"], values["output"], int(values["reserve"]))


@dataclass(frozen=True)
class Bands:
    """Estimated tokens of each band of one prompt, against the input budget (all in tokens)."""

    budget: int
    instructions: int
    examples: int
    clauses: int
    claim: int
    task: int
    reserved_output: int
    clause_band: int

    @property
    def input_total(self) -> int:
        """Instructions, examples, clauses, claim and task: the prompt's estimated input tokens."""
        return self.instructions + self.examples + self.clauses + self.claim + self.task

    def rows(self) -> list[tuple[str, int]]:
        """``(band, tokens)`` in prompt order, then the input total, the budget and the reserved output."""
        return [("instructions", self.instructions), ("examples", self.examples), ("clauses", self.clauses),
                ("claim", self.claim), ("task", self.task), ("input total", self.input_total),
                ("input budget", self.budget), ("clause band (limit)", self.clause_band),
                ("reserved output", self.reserved_output)]


def clause_band(budget: int, instructions: int, examples: int, claim: int, task: int,
                limit: int = CLAUSE_BAND_TOKENS) -> int:
    """The clause band's size: ``limit``, or less when the fixed bands leave less of ``budget``.

    Raises :class:`TriageError` when ``budget`` is smaller than the fixed bands themselves
    (instructions plus examples plus claim plus task), naming each and how to give a larger
    budget (``--budget-tokens`` / ``--cost-line`` on the CLI, ``budget_tokens`` / ``cost_line``
    in an API request), the smallest that would leave the band ``limit`` tokens.
    """
    fixed = instructions + examples + claim + task
    if budget < fixed:
        raise TriageError(f"budget of {budget} input tokens is smaller than the instructions plus the claim "
                          f"({fixed} tokens: instructions {instructions}, examples {examples}, claim {claim}, "
                          f"task {task}); give a larger budget (--budget-tokens {fixed + limit} or a cost line "
                          f"with a higher cost; budget_tokens in an API request) or shorten the claim", "budget")
    return min(limit, budget - fixed)
