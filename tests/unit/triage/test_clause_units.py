"""Clause units for triage (issue 31): from the document's structure, capped at 400 tokens and split at
paragraph joints as ``4.2#1``, whatever chunk size the ingest used; and the claim read as several
queries whose fusion finds the deciding clause a single bag-of-words query misses."""

from __future__ import annotations

from longdoc.core.tokens import estimate_tokens
from longdoc.ingest.pipeline import chunk_bytes
from longdoc.triage.claim import claim_from_json
from longdoc.triage.clauses import Clause, units_as_clauses
from longdoc.triage.queries import claim_queries, definitions
from longdoc.triage.ranking import legacy_rank, rank_claim
from longdoc.triage.units import UNIT_MAX_TOKENS, clause_units


def wording() -> bytes:
    """An invented wording: a short section 1 and a long section 2 of ten paragraphs (over 400 tokens)."""
    long_paragraphs = "\n\n".join(
        f"Paragraph {p} of the escape of water cover: we pay for sudden damage to the dwelling from pipe number {p}, "
        "provided the water did not seep for weeks, and the damaged floors, walls and ceilings are repaired with "
        "materials of like kind and quality within a reasonable time after the loss." for p in range(1, 11))
    text = ("# Home Wording\n\n## 1 Fire\n\nWe pay for direct loss caused by fire or lightning.\n\n"
            f"## 2 Escape of Water\n\n{long_paragraphs}\n\n## 3 Theft\n\nWe pay for theft from a locked dwelling.\n")
    return text.encode()


def test_a_long_section_is_split_at_paragraphs_with_a_suffix_whatever_the_chunk_size() -> None:
    # Given the same wording chunked at the ingest defaults (1000/2000) and at 300/400 tokens
    for target, cap in ((1000, 2000), (300, 400)):
        chunks = chunk_bytes("home.md", wording(), target_tokens=target, max_tokens=cap)
        # When triage builds its clause units
        units = clause_units(chunks)
        ids = [u.unit_id for u in units]
        # Then the short sections are whole units and section 2 comes in parts 2#1, 2#2, ... each within 400 tokens
        assert ids[0] == "1" and ids[-1] == "3", ids
        parts = [u for u in units if u.unit_id.startswith("2#")]
        assert len(parts) >= 2 and [u.unit_id for u in parts] == [f"2#{n}" for n in range(1, len(parts) + 1)]
        assert all(estimate_tokens(u.text) <= UNIT_MAX_TOKENS for u in units)
        # And each part starts at a paragraph joint, the parts together hold every paragraph once
        assert parts[0].text.startswith("## 2 Escape of Water\n\nParagraph 1 ")
        assert all(u.text.startswith("Paragraph ") for u in parts[1:])
        assert sum(u.text.count("Paragraph ") for u in parts) == 10
        assert all(u.heading_path[-1] == "2 Escape of Water" for u in parts)
    # And the units are the same whichever chunk size the ingest used
    small = [u.text for u in clause_units(chunk_bytes("home.md", wording(), target_tokens=300, max_tokens=400))]
    large = [u.text for u in clause_units(chunk_bytes("home.md", wording()))]
    assert small == large


def pool() -> list[Clause]:
    text = ("# Home Wording\n\n## 1 Definitions\n\n"
            "\"Flood\" means the rising or overflow of any creek, river or other body of water over its banks.\n"
            "\"Dwelling\" means the house described in the declarations.\n"
            "\"Premises\" means the land on which the dwelling stands.\n\n"
            "## 2 Escape of Water\n\nWe pay for water damage to the basement from a sudden escape of water from "
            "plumbing inside the dwelling.\n\n"
            "## 3 Sump\n\nWe pay for water entering the basement when the sump pump fails after heavy rain.\n\n"
            "## 4 Windows\n\nWe pay for water entering through a window or door broken by wind or rain.\n\n"
            "## 5 Exclusion: Flood\n\nWe do not insure loss or damage caused by Flood, whether driven by wind or not.\n\n"
            "## 6 Notice\n\nYou must tell us and the police of any loss without delay.\n")
    return units_as_clauses(chunk_bytes("home.md", text.encode(), target_tokens=300, max_tokens=400))


def test_fusion_with_the_wordings_defined_term_finds_the_clause_one_bag_of_words_misses() -> None:
    # Given a loss told in plain words ("the creek overflowed") that the wording calls Flood in its definitions
    claim = claim_from_json({"claim_id": "c1", "loss_date": "2024-04-01", "policy_number": "HO-1",
                             "claim_amount": "$12,000.00",
                             "claim_form": {"description": "Water in the basement after heavy rain"},
                             "adjuster_note": "The creek behind the house overflowed its banks after heavy rain and "
                                              "water came into the basement through the door."})
    clauses = pool()
    # When the claim is ranked as one query (the legacy ranking) and as fused queries
    single = [c.clause_id for c in legacy_rank(clauses, claim)[:3]]
    fused = rank_claim(clauses, claim)
    # Then only the fused ranking has the flood exclusion in its top 3, found by the defined-terms query
    assert "5" not in single
    top3 = [c.clause_id for c in fused.clauses[:3]]
    assert "5" in top3, top3
    exclusion = next(c for c in fused.clauses if c.clause_id == "5")
    assert "defined terms#1" in fused.reasons[exclusion.key]
    names = [q.name for q in fused.queries]
    assert names[0] == "loss" and "defined terms" in names and fused.queries[0].text.endswith(" Flood")
    # And the loss query carries neither the policy number nor the amount
    assert "HO-1" not in fused.queries[0].text and "12,000" not in fused.queries[0].text


def test_a_deadline_phrase_gets_its_own_query_and_stays_out_of_the_loss_query() -> None:
    # Given a claim whose note tells the loss and, in another sentence, when it was reported
    claim = claim_from_json({"loss_date": "2024-05-01", "claim_form": {"description": "Bicycle stolen"},
                             "adjuster_note": "The bicycle was stolen from the shed. "
                                              "He told the police two weeks later."})
    defs = definitions([c.text for c in pool()])
    # When the claim's queries are written
    queries = {q.name: q.text for q in claim_queries(claim, defs)}
    # Then the deadline sentence is the condition query, and not part of the loss query
    assert queries["condition"] == "He told the police two weeks later."
    assert "police" not in queries["loss"] and "stolen" in queries["loss"]
    assert {d.term for d in defs} == {"Flood", "Dwelling", "Premises"}


def test_an_amount_given_as_an_object_is_a_case_fact_not_loss_words() -> None:
    # Given a claim whose amount is an object (value and currency) and whose description is a summary field
    claim = claim_from_json({"loss_date": "2024-05-01", "claim_amount": {"value": "48213", "currency": "USD"},
                             "incident_summary": "Bicycle stolen from the shed"})
    queries = {q.name: q.text for q in claim_queries(claim)}
    # Then the amount's parts are case facts, none of their digits or words in the loss query,
    # and the summary is the loss (a summary is not a sum)
    assert claim.case_facts["claim_amount.value"] == "48213" and claim.case_facts["claim_amount.currency"] == "USD"
    assert "incident_summary" not in claim.case_facts
    assert queries["loss"] == "Bicycle stolen from the shed"


def test_a_very_long_note_shares_the_loss_weight_among_the_sentence_queries_made() -> None:
    # Given a note of 2,000 sentences (a 200 KB paste)
    note = " ".join(f"The {n}th pane of the greenhouse cracked in the hail." for n in range(2000))
    claim = claim_from_json({"loss_date": "2024-05-01", "adjuster_note": note})
    sentence_queries = [q for q in claim_queries(claim) if q.name.startswith("sentence ")]
    # Then the capped sentence queries share one query's weight (not 1/2000, rounded to 0.0)
    from longdoc.triage.queries import MAX_SENTENCE_QUERIES

    assert len(sentence_queries) == MAX_SENTENCE_QUERIES
    assert all(q.weight == round(1 / MAX_SENTENCE_QUERIES, 3) > 0 for q in sentence_queries)


def test_a_claims_sentences_do_not_end_at_an_abbreviation() -> None:
    # Given a note with incl., approx. and e.g. inside its sentences
    from longdoc.triage.queries import sentences

    note = ("Water ran through the ceiling, incl. the light fittings. Damage approx. 3 rooms, e.g. the hall; "
            "we called a plumber.")
    # Then it has three sentences, each whole
    assert sentences(note) == ["Water ran through the ceiling, incl. the light fittings.",
                               "Damage approx. 3 rooms, e.g. the hall;", "we called a plumber."]


def test_a_txt_wordings_lettered_sections_and_a_definitions_run_after_an_exclusion_are_their_own_units() -> None:
    # Given a .txt wording: SECTION A) over numbered items, SECTION D) EXCLUSIONS, then "DEFINITIONS -" and its terms
    text = ("HOME COVER WORDING\n\nSECTION A) WHAT IS COVERED\n\n"
            "1. Fire. We pay for direct loss caused by fire or lightning to the dwelling.\n\n"
            "2. Theft. We pay for theft from the dwelling after forcible entry.\n\n"
            "SECTION D) EXCLUSIONS\n\nWe do not insure loss caused by flood, wear and tear, or vermin.\n\n"
            "DEFINITIONS -\n\nFlood means water overflowing the banks of a river.\n"
            "Vermin means rats, mice and insects.\nDwelling means the house named in the schedule.\n")
    from longdoc.triage.queries import is_definitions

    units = {u.unit_id: u for u in clause_units(chunk_bytes("w.txt", text.encode()))}
    # Then the exclusion is not folded into item 2, and the definitions are a unit apart from it
    assert units["2"].text == "2. Theft. We pay for theft from the dwelling after forcible entry."
    assert units["2"].heading_path == ("SECTION A) WHAT IS COVERED", "2. Theft.")
    assert units["Section D#1"].text == "We do not insure loss caused by flood, wear and tear, or vermin."
    assert not is_definitions(units["Section D#1"].text, units["Section D#1"].heading_path)
    assert units["Section D#2"].heading_path == ("SECTION D) EXCLUSIONS", "DEFINITIONS -")
    assert is_definitions(units["Section D#2"].text, units["Section D#2"].heading_path)
