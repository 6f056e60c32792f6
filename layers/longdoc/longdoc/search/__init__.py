"""Shared retrieval machinery: BM25 with word pairs, rank fusion and the quote finder (below every stage)."""
