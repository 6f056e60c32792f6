"""Ingest pipeline: parse a file, chunk it at its joints, embed the chunks and upsert them."""
