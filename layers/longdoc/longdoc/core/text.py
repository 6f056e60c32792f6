"""Text utilities shared by every pipeline: sentence spans and numerals."""

from __future__ import annotations
