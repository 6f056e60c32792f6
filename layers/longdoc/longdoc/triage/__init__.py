"""Claim triage against a policy set: the wording in force, filtered before ranking, a clause band sized from the cost line.

Modules: :mod:`.collections` (policy sets from document metadata), :mod:`.terms` (the wording
in force at the loss date), :mod:`.overlaps` (wordings of one line in force on the same dates), :mod:`.claim` (claim files), :mod:`.clauses` (clauses of the
chunks, hybrid ranking, the clause band), :mod:`.budget` (input budget from the cost line),
:mod:`.prompt` (the request), :mod:`.answer` (the tool-call harness and the offline baseline),
:mod:`.service` (one triage), :mod:`.evaluate` (recall of gold clauses, no model calls).
Triage imports ``search`` (BM25, fusion, the quote finder) and ``core``, never ``extract`` or ``ingest``.
"""
