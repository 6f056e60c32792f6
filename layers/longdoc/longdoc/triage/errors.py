"""Triage errors: one clear line each, naming the input at fault (the CLI prints it, the API returns it)."""

from __future__ import annotations

from longdoc.core.errors import LongdocError, NotFound


class TriageError(LongdocError):
    """A triage input is unusable: claim file, loss date, line of business, terms or budget.

    ``field`` names the input at fault (``claim``, ``loss_date``, ``line_of_business``,
    ``collection``, ``budget``) for the API's answer.
    """

    def __init__(self, message: str, field: str | None = None):
        """Keep ``message`` as the error text and ``field`` for the API."""
        self.field = field
        super().__init__(message)


class UnknownCollection(TriageError, NotFound):
    """No READY document carries this collection name (the API answers 404)."""

    def __init__(self, name: str, known: list[str]):
        """Name the collection and list the known ones."""
        hint = f" (known: {', '.join(known)})" if known else " (no document has a collection yet: set `collection` in its metadata)"
        super().__init__(f"unknown collection {name!r}{hint}", "collection")
