"""The model a run uses when none is named, per provider, on its own so that settings
(:mod:`longdoc.config`, imported by every function at cold start) need not load the capability
table. The rows themselves are in :mod:`longdoc.core.models_catalogue` (``data/models.json``)."""

from __future__ import annotations

DEFAULT_MODELS: dict[str, str] = {"anthropic": "claude-sonnet-5-5", "bedrock": "global.anthropic.claude-sonnet-5-5"}
"""The model a run uses when none is named, per provider (``docs/decisions.md``, "Default model")."""
