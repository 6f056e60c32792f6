"""The MCP tools' argument models, and :func:`model_signature`, which makes a model a tool's signature.

Where the API or the CLI has a request model, the tool takes it as it is:
:class:`~longdoc.extract.runs.ExtractionRequest` (``POST /extractions``),
:class:`~longdoc.summarize.models.SummaryRequest` (``POST /summaries``) and
:class:`~longdoc.triage.service.TriageRequest` (``POST /triage``). The others are defined here with
the bounds the domain already sets (a search query of at most
:data:`~longdoc.extract.prompt.MAX_QUERY_CHARS` characters and at most
:data:`~longdoc.extract.prompt.MAX_SEARCH_TOP_K` chunks, the model's own ``search_chunks`` limits).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from longdoc.extract.prompt import MAX_QUERY_CHARS, MAX_SEARCH_TOP_K

DocId = Annotated[str, Field(min_length=1, max_length=128, description="the document id (`list_documents`)")]
DocVersion = Annotated[str | None, Field(min_length=1, max_length=64,
                                         description="a version of the document; default: its latest READY one")]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoArgs(_Args):
    """A tool without arguments."""


class ListDocumentsArgs(_Args):
    """``list_documents``: every document, or those of one collection (policy set)."""

    collection: str | None = Field(None, min_length=1, max_length=200, description="only documents of this collection")


class IngestArgs(_Args):
    """``ingest``: one file on the server's machine (PDF, DOCX, HTML, Markdown or text)."""

    path: str = Field(min_length=1, max_length=4096, description="path of the file on the server's machine")


class SearchArgs(_Args):
    """``search_chunks``: the model's own search over one document version."""

    doc_id: DocId
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="what to look for, in your own words")
    top_k: int = Field(5, ge=1, le=MAX_SEARCH_TOP_K, description="how many chunks to return, best first")
    doc_version: DocVersion = None

    @field_validator("query")
    @classmethod
    def _has_words(cls, query: str) -> str:
        """A query of spaces only matches nothing meaningful (BM25 has no terms): refused, not answered."""
        if not query.strip():
            raise ValueError("the query is blank; give the words to look for")
        return query


class ChunkArgs(_Args):
    """``get_chunk``: one chunk by id (``<doc_id>:<version[:8]>:<ordinal>``)."""

    chunk_id: str = Field(min_length=1, max_length=220, description="a chunk id from search_chunks or a citation")


class PageArgs(_Args):
    """``get_page_text``: the indexed text of one physical page."""

    doc_id: DocId
    page: int = Field(ge=1, le=100_000, description="1-based physical page (not the printed label)")
    doc_version: DocVersion = None


RUN_ID_PATTERN = r"^run-[0-9a-f]{1,64}$"
"""Run ids: ``run-`` + hex (:func:`~longdoc.extract.runs.new_run_id`, 12; request-derived ones, 16)."""
SUMMARY_ID_PATTERN = r"^sum-[0-9a-f]{1,64}$"
"""Summary ids: ``sum-`` + hex (:func:`~longdoc.summarize.runs.summary_id_for`, 20)."""
TRIAGE_ID_PATTERN = r"^tri-[0-9a-f]{1,64}$"
"""Triage ids: ``tri-`` + hex (:func:`~longdoc.mcpserver.jobs.new_triage_id`, 16)."""


class RunArgs(_Args):
    """``get_run`` / ``resume_run``: an extraction run started by ``extract``."""

    run_id: str = Field(min_length=5, max_length=68, pattern=RUN_ID_PATTERN,
                        description="the run id extract returned (run-<hex>)")


class SummaryIdArgs(_Args):
    """``get_summary``: a summary started by ``summarize``."""

    summary_id: str = Field(min_length=5, max_length=68, pattern=SUMMARY_ID_PATTERN,
                            description="the summary id summarize returned (sum-<hex>)")


class TriageIdArgs(_Args):
    """``get_triage``: a triage started by ``triage``."""

    triage_id: str = Field(min_length=5, max_length=68, pattern=TRIAGE_ID_PATTERN,
                           description="the triage id triage returned (tri-<hex>)")


def model_signature(model: type[BaseModel], body: Callable[[dict[str, Any]], Any], name: str) -> Callable[..., Any]:
    """A function named ``name`` whose keyword parameters are ``model``'s fields, calling ``body(arguments)``.

    The SDK derives a tool's input schema from its function's signature
    (:func:`mcp.server.mcpserver.utilities.func_metadata.func_metadata`); each parameter here is the
    field's own annotation with its constraints and description, and its default, so the schema
    a client sees is the model's, field for field. ``body`` gets the arguments as a dict, to
    validate with ``model`` as a whole (its model validators too, e.g. ``TriageRequest``'s one budget).
    """
    params = []
    for field_name, field in model.model_fields.items():
        annotation: Any = field.rebuild_annotation()
        if field.description:
            annotation = Annotated[annotation, Field(description=field.description)]
        default = (inspect.Parameter.empty if field.is_required()
                   else field.get_default(call_default_factory=True, validated_data={}))
        params.append(inspect.Parameter(field_name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=annotation))

    def call(**arguments: Any) -> Any:
        return body(arguments)

    call.__name__ = call.__qualname__ = name
    call.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return call
