"""Write the 2024 reissue of the dev homeowners wording from the 2023 term (run once; the output is committed).

A reissue as insurers make them: clauses changed (vacancy 30 -> 60 days, freezing 4 -> 7
days, the deductible threshold $25,000 -> $50,000), renumbered (Exclusions become section 4,
Coverage Features section 5) and added (2.5 Sewer Back-up, 4.12 Data and cyber events, 7.2
Notice of water damage, whose wrapped body line starts "14 days after the leak").
Usage: ``python tests/data/triage/make_reissue.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent / "policy-set"


def reissue(text: str) -> str:
    """The 2024 wording's Markdown from the 2023 wording's."""
    text = text.replace("HO-2023", "HO-2024").replace("Term 2023.", "Term 2024 (reissue of HO-2023).")
    head, rest = text.split("## 4 Coverage Features", 1)
    features, rest = rest.split("## 5 Exclusions", 1)
    exclusions, tail = rest.split("## 6 Basis of Claim Payment", 1)
    features = re.sub(r"### 4\.(\d+)", r"### 5.\1", features)
    exclusions = re.sub(r"### 5\.(\d+)", r"### 4.\1", exclusions)
    exclusions = exclusions.replace("more than 30 consecutive days", "more than 60 consecutive days")
    exclusions = exclusions.replace("more than 4 consecutive days", "more than 7 consecutive days")
    exclusions = exclusions.rstrip() + ("\n\n### 4.12 Data and cyber events\n\nNor do we insure loss or damage caused "
                                        "directly or indirectly by a data problem or a cyber event, including the "
                                        "corruption, loss or theft of data, whether or not there are one or more "
                                        "other causes or events that contribute to the loss.\n\n")
    head = head.replace("## 3 Specified Perils", "### 2.5 Sewer Back-up\n\n\"Sewer Back-up\" means the backing up "
                        "or escape of water from a sewer, sump or septic tank, retention tank, French drain or "
                        "water leader into your dwelling.\n\n## 3 Specified Perils")
    tail = tail.replace("If your claim exceeds $25,000", "If your claim exceeds $50,000")
    tail = tail.rstrip() + ("\n\n### 7.2 Notice of water damage\n\nAny escape of water that is or may be covered "
                            "under 3.4 must be reported to us in writing no later than\n14 days after the leak is "
                            "first discovered. We may refuse a claim that is reported later where the delay has "
                            "increased the loss or damage.\n")
    return (head + "## 4 Exclusions" + exclusions + "## 5 Coverage Features" + features
            + "## 6 Basis of Claim Payment" + tail)


if __name__ == "__main__":
    source = (HERE / "homeowners-wording-2023.md").read_text(encoding="utf-8")
    (HERE / "homeowners-wording-2024.md").write_text(reissue(source), encoding="utf-8")
