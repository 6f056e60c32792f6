"""Bulk extraction through the Message Batches API (issue 14): rounds of one model turn per document run."""
