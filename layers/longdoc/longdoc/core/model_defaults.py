"""The model a run uses when none is named, per provider, on its own so that settings
(:mod:`longdoc.config`, imported by every function at cold start) need not load the capability
table. The rows themselves are in :mod:`longdoc.core.models_catalogue` (``data/models.json``)."""

from __future__ import annotations

DEFAULT_MODELS: dict[str, str] = {"anthropic": "claude-sonnet-5-5", "bedrock": "anthropic.claude-sonnet-5-5"}
"""The model a run uses when none is named, per provider (``docs/decisions.md``, "Default model"): each a
row id of ``data/models.json`` that a page documents, never one marked ``assumed`` (the Bedrock id is the one
the Messages-API Bedrock endpoint documents, https://platform.claude.com/docs/en/build-with-claude/claude-in-amazon-bedrock)."""
