"""Stored shapes of documents and chunks, shared by ingest, retrieval and extraction, and where a
character of a chunk is (:func:`locate`: its page, printed page label, section and heading path).

All offsets are character offsets (``str`` indices) into the parsed document text;
all token counts are estimates from :func:`longdoc.core.tokens.estimate_tokens`;
pages are 1-based physical page indexes (``None`` for formats without pages).
Exact values (money, ids, dates) are strings end to end and never floats.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, SerializationInfo, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PageSpan(_Frozen):
    """One page of a parsed document: ``text[char_start:char_end]`` is its text.

    ``page`` is the 1-based physical page index; ``None`` for formats without pages (text,
    Markdown, HTML, DOCX). ``label`` is the printed page number (``"iv"``, ``"14"``) from the
    PDF's page labels or, failing those, from the running header or footer; ``None`` when
    the page prints none.
    """

    page: int | None
    char_start: int = Field(ge=0)
    char_end: int = Field(ge=0)
    label: str | None = None



METADATA_VALUE_MAX_CHARS = 200
"""Longest accepted document metadata value, in characters (our own rule: these are short
labels copied onto every chunk; S3 itself caps all user metadata of an object at 2 KB,
https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html)."""


METADATA_FIELDS = ("doc_type", "line_of_business", "term", "collection", "effective_from", "effective_to", "endorses")
"""Every document metadata field, in order (S3 metadata names use ``-``: ``x-amz-meta-effective-from``)."""
COLLECTION_FIELDS = ("collection", "effective_from", "effective_to", "endorses")
"""The policy-set fields (issue 15): left out of JSON when unset, so stored documents and chunks without
them serialise byte for byte as before (Python-mode dumps keep them, so ``None`` still clears a value)."""


def _without_unset_collection_fields(data: dict[str, Any], info: SerializationInfo) -> dict[str, Any]:
    if not info.mode_is_json():
        return data
    return {k: v for k, v in data.items() if not (k in COLLECTION_FIELDS and v is None)}


class DocumentMetadata(_Frozen):
    """Optional business metadata of a document, copied onto each of its chunks.

    Sources: S3 object metadata (``x-amz-meta-doc-type`` etc.) and/or a ``<file>.metadata.json``
    sidecar; the sidecar wins key by key (see :func:`longdoc.ingest.pipeline.document_metadata`).
    All values are free strings (``term`` e.g. ``"2024-01-01/2024-12-31"``) of 1 to
    :data:`METADATA_VALUE_MAX_CHARS` characters without control characters, except
    ``effective_from`` / ``effective_to``, ISO dates (``YYYY-MM-DD``, both ends in force, the
    end not before the start). ``collection`` names a policy set, ``endorses`` is the doc_id of
    the wording an endorsement amends (see :mod:`longdoc.triage`); anything else (a value that is
    not a string: a JSON number such as ``"term": 2024`` or ``1e400``, true/false, an array, an
    object; docs/extraction.md, "a value that is not a string ... fails the document") raises
    :class:`pydantic.ValidationError` naming the field.
    """

    doc_type: str | None = Field(default=None, min_length=1, max_length=METADATA_VALUE_MAX_CHARS)
    line_of_business: str | None = Field(default=None, min_length=1, max_length=METADATA_VALUE_MAX_CHARS)
    term: str | None = Field(default=None, min_length=1, max_length=METADATA_VALUE_MAX_CHARS)
    # Collections (policy sets, issue 15): all optional, so documents without them keep their JSON.
    collection: str | None = Field(default=None, min_length=1, max_length=METADATA_VALUE_MAX_CHARS)
    effective_from: str | None = Field(default=None, min_length=10, max_length=10)
    effective_to: str | None = Field(default=None, min_length=10, max_length=10)
    endorses: str | None = Field(default=None, min_length=1, max_length=METADATA_VALUE_MAX_CHARS)

    @field_validator(*METADATA_FIELDS, mode="before")
    @classmethod
    def _string(cls, value: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):  # JSON 1e400 / NaN, read by Python as inf / nan
                raise ValueError("must be a string, not a non-finite number")
            raise ValueError(f'must be a string, not the number {value!r} (write it in quotes: "{value!r}")')
        kind = {bool: "true/false", list: "an array", dict: "an object"}.get(type(value), type(value).__name__)
        raise ValueError(f"must be a string, not {kind}")

    @field_validator(*METADATA_FIELDS)
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        if value is not None and any(ord(ch) < 32 or 127 <= ord(ch) <= 159 or ch in "\u2028\u2029" for ch in value):
            raise ValueError("must not contain control characters or line separators "
                             "(line breaks, tabs, NUL, U+0085, U+2028, U+2029)")
        return value

    @field_validator("effective_from", "effective_to")
    @classmethod
    def _iso_date(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                date.fromisoformat(value)
            except ValueError:
                raise ValueError(f"must be an ISO date YYYY-MM-DD, got {value!r}") from None
        return value

    @model_serializer(mode="wrap")
    def _serialise(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        return _without_unset_collection_fields(handler(self), info)

    @model_validator(mode="after")
    def _ordered(self) -> "DocumentMetadata":
        if self.effective_from and self.effective_to and self.effective_to < self.effective_from:
            raise ValueError(f"effective_to {self.effective_to} is before effective_from {self.effective_from}")
        return self

    @classmethod
    def from_mapping(cls, values: dict[str, Any] | None) -> "DocumentMetadata":
        """Build from a dict whose keys may use ``-`` or ``_`` and any case (S3 metadata keys
        arrive lower-cased with dashes); unknown keys are ignored; ``None`` or blank values
        mean "not set". Strings are stripped; any other type (a number such as JSON
        ``"term": 2024``, list, object, true/false) is left for validation to reject.
        Raises :class:`pydantic.ValidationError` naming the field for a bad value."""
        wanted = set(METADATA_FIELDS)
        picked: dict[str, Any] = {}
        for key, value in (values or {}).items():
            name = str(key).strip().lower().replace("-", "_")
            if name not in wanted or value is None:
                continue
            if isinstance(value, str):
                value = value.strip()
                if not value:
                    continue
            picked[name] = value
        return cls(**picked)


class SectionSpan(_Frozen):
    """A numbered section (or the preamble, ``section_id=None``) as a range of document text."""

    section_id: str | None
    heading_path: list[str] = Field(default_factory=list)
    char_start: int = Field(ge=0)
    char_end: int = Field(ge=0)


class Chunk(_Frozen):
    """A retrievable piece of a document, cut at its real joints.

    ``chunk_id`` is ``"{doc_id}:{doc_version[:8]}:{ordinal:04d}"`` and is stable while the
    document bytes do not change. ``text == document.text[char_start:char_end]``.
    ``section_id`` is the number people cite (``"4.2"``), with ``#n`` when a section is
    split (``"4.2#2"``), or ``None`` when the text precedes any numbered section.
    ``page_spans`` and ``section_spans`` (absolute offsets) list the pages and whole
    sections the chunk touches, so a quote resolves to exactly one page and one section.
    ``token_count`` is an estimate; ``content_hash`` is SHA-256 hex of ``text``.
    ``page_labels`` are the printed labels of pages ``page_start..page_end`` in order
    (``None`` for an unlabelled page; empty without pages). ``overlap_chars`` is how many
    leading characters repeat the end of the previous chunk (a split section's
    continuation); ``overlap_missing`` is True on a continuation that could not repeat
    any whole sentence because the previous chunk's last one is over the overlap budget.
    ``doc_type``, ``line_of_business``, ``term``, ``collection``, ``effective_from``,
    ``effective_to`` and ``endorses`` are optional document metadata (S3 object metadata or a
    ``<file>.metadata.json`` sidecar) copied onto every chunk (the chunker copies every
    :class:`DocumentMetadata` field, so the two lists must match; ids never depend on them).
    ``ocr`` is True when any of the chunk's text was read by OCR (a scanned page), and
    ``ocr_confidence`` is then the mean OCR word confidence (0-1) over those pages, weighted by
    their word counts; both are left out of the serialised chunk when ``ocr`` is False.
    ``ocr_low_confidence`` is True when one of those pages was read under the confidence
    threshold (issue 27; left out when False). ``ocr_pages`` are the 1-based pages of the chunk that
    OCR read (a chunk over native page 1 and scanned pages 2-3: ``[2, 3]``) and ``ocr_rotations``
    those read turned (page -> clockwise degrees); both left out when empty.
    """

    chunk_id: str
    doc_id: str
    doc_version: str
    ordinal: int = Field(ge=0)
    source: str
    page_start: int | None
    page_end: int | None
    section_id: str | None
    heading_path: list[str] = Field(default_factory=list)
    text: str
    char_start: int = Field(ge=0)
    char_end: int = Field(ge=0)
    token_count: int = Field(ge=0)
    content_hash: str
    oversize: bool = False
    page_spans: list[PageSpan] = Field(default_factory=list)
    section_spans: list[SectionSpan] = Field(default_factory=list)
    page_labels: list[str | None] = Field(default_factory=list)
    overlap_chars: int = Field(0, ge=0)
    overlap_missing: bool = False
    doc_type: str | None = None
    line_of_business: str | None = None
    term: str | None = None
    collection: str | None = None
    effective_from: str | None = None
    effective_to: str | None = None
    endorses: str | None = None
    ocr: bool = False
    ocr_confidence: float | None = Field(None, ge=0, le=1)
    ocr_low_confidence: bool = False
    ocr_pages: list[int] = Field(default_factory=list)
    ocr_rotations: dict[int, int] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _serialise(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        """Leave unset fields added later out (collection fields in JSON; ``ocr``/``ocr_confidence`` while
        ``ocr`` is False), so a chunk written before them serialises byte for byte as before."""
        data = _without_unset_collection_fields(handler(self), info)
        if not self.ocr:
            data.pop("ocr", None)
            data.pop("ocr_confidence", None)
        if not self.ocr_low_confidence:
            data.pop("ocr_low_confidence", None)
        if not self.ocr_pages:
            data.pop("ocr_pages", None)
        if not self.ocr_rotations:
            data.pop("ocr_rotations", None)
        return data

    @property
    def section_ids(self) -> list[str]:
        """Every section id in the chunk, in order (several when small sections share it)."""
        return [s.section_id for s in self.section_spans if s.section_id]

    # Location of an offset: the rules are the functions at the end of this module; these
    # delegates keep the chunker tests' spelling (chunk.section_of(offset)).
    def page_of(self, offset_in_chunk: int) -> int | None:
        """Return the page of a chunk-relative character offset (see :func:`page_at`)."""
        return page_at(self, offset_in_chunk)

    def label_of(self, offset_in_chunk: int) -> str | None:
        """Return the printed page label of a chunk-relative offset (see :func:`label_at`)."""
        return label_at(self, offset_in_chunk)

    def heading_path_of(self, offset_in_chunk: int) -> list[str]:
        """Return the heading path of a chunk-relative offset (see :func:`heading_path_at`)."""
        return heading_path_at(self, offset_in_chunk)

    def section_of(self, offset_in_chunk: int) -> str | None:
        """Return the section id of a chunk-relative offset (see :func:`section_at`)."""
        return section_at(self, offset_in_chunk)


class DocumentRecord(BaseModel):
    """Registry entry for one ingested document version.

    ``status``: ``INGESTING`` while work is under way (or was cut short and awaits the
    redelivery that resumes it), ``READY`` when chunks are stored and indexed, ``FAILED``
    with ``reason`` (a document error is final; any other error is retried by SQS and
    resumes from the recorded progress), ``DELETED`` once the source object was removed
    (vectors gone; registry entry and chunk list kept for past citations).

    Progress of the current attempt, so a redelivered message continues instead of
    starting over: ``stage`` (``chunked``, ``embedding``, ``upserting``, ``done``),
    ``embedded`` (chunks with a vector stored in the embedding cache), ``upserted``
    (chunks whose vectors are in the index, in ordinal order), ``reused`` (vectors taken
    from the previous version's cache instead of embedding again), ``attempts``.
    ``source_key`` is the full object key; ``previous_version`` the version that was
    latest when this one started; ``metadata`` the document metadata its chunks carry
    (empty for records written before it was kept). Durations are seconds as decimal strings
    (``duration_seconds``; ``timings`` per stage of the last attempt). ``revision`` counts the
    conditional writes of this version's entry (:meth:`~longdoc.core.ports.StateStore.replace_document`:
    an ingest attempt writes only over the entry it last read or wrote, never over a
    ``DELETED`` mark or another worker's newer entry); 0 for entries never written that way.
    ``page_outcomes`` are the 1-based pages by outcome (``text``, ``ocr``, ``ocr_low_confidence``,
    ``empty``, ``damaged``, ``unreadable``; empty for formats without pages and for records written before
    issue 27), ``ocr_rotations`` the OCR pages that were read turned (1-based page -> clockwise
    degrees, 90/180/270; pages read upright are not listed), ``furniture_lines`` the lines removed
    as running headers and footers (1-based page -> lines; pages with none, formats without pages and
    records written before it was kept are not listed) and ``warnings`` the ingest's warnings,
    one line each, naming the pages.
    """

    doc_id: str
    doc_version: str
    source: str
    status: Literal["INGESTING", "READY", "FAILED", "DELETED"]
    reason: str | None = None
    pages: int = 0
    chunks: int = 0
    content_sha256: str = ""
    embedding_model: str | None = None
    updated_at: str = ""
    duration_seconds: str | None = None
    pages_needing_ocr: list[int] = Field(default_factory=list)
    page_outcomes: dict[str, list[int]] = Field(default_factory=dict)
    ocr_rotations: dict[int, int] = Field(default_factory=dict)
    furniture_lines: dict[int, int] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    source_key: str | None = None
    previous_version: str | None = None
    stage: str | None = None
    embedded: int = 0
    upserted: int = 0
    reused: int = 0
    embedding_tokens: int = 0
    attempts: int = 0
    timings: dict[str, str] = Field(default_factory=dict)
    metadata: DocumentMetadata = Field(default_factory=DocumentMetadata)
    revision: int = 0
    chunking: str | None = None
    """How the version was chunked (``"300/400/0.15"``: target/max tokens, overlap; its metadata's
    profile, :mod:`longdoc.ingest.profiles`); None for entries written before it was kept."""


# --- Where a character of a chunk is ----------------------------------------------------------
# The one place that resolves a chunk-relative offset (``str`` index into ``chunk.text``) to a
# location. Citation verification (:func:`longdoc.extract.citations.verify_citation`) cites a
# quote at the location of its first character; chunker tests check chunk spans with it. Every
# rule reads the chunk's absolute ``page_spans`` / ``section_spans``: the span that holds an
# offset is the last one (in list order) starting at or before it.


class Location(NamedTuple):
    """The location of one character of a chunk.

    ``page``: 1-based physical page (``None`` for formats without pages); ``page_label``:
    that page's printed label (``None`` when it prints none); ``section_id``: the section
    with its split suffix (``"4.2#2"``; ``None`` in a preamble); ``heading_path``: the
    headings above that section, outermost first.
    """

    page: int | None
    page_label: str | None
    section_id: str | None
    heading_path: list[str]


def _holding(spans: Sequence[PageSpan | SectionSpan], absolute: int) -> list[int]:
    """Indexes of the spans starting at or before ``absolute`` (document offset), in list order."""
    return [i for i, span in enumerate(spans) if absolute >= span.char_start]


def page_at(chunk: Chunk, offset: int) -> int | None:
    """The physical page (1-based) of chunk-relative ``offset``; ``page_start`` before any span, None without pages."""
    held = _holding(chunk.page_spans, chunk.char_start + offset)
    return chunk.page_spans[held[-1]].page if held else chunk.page_start


def label_at(chunk: Chunk, offset: int) -> str | None:
    """The printed page label of chunk-relative ``offset`` (``None`` if that page prints none or there are no pages)."""
    if not chunk.page_spans:
        return None
    held = _holding(chunk.page_spans, chunk.char_start + offset)
    return chunk.page_spans[held[-1] if held else 0].label


def section_at(chunk: Chunk, offset: int) -> str | None:
    """The section id (with split suffix) of chunk-relative ``offset``.

    A chunk with at most one section span answers its own ``section_id`` (which carries
    the ``#n`` suffix of a split section); otherwise the span holding the offset, or the
    first span for an offset before every span.
    """
    if len(chunk.section_spans) <= 1:
        return chunk.section_id
    held = _holding(chunk.section_spans, chunk.char_start + offset)
    return chunk.section_spans[held[-1] if held else 0].section_id


def heading_path_at(chunk: Chunk, offset: int) -> list[str]:
    """The heading path (a new list) of the section holding chunk-relative ``offset``; the chunk's own before any span."""
    held = _holding(chunk.section_spans, chunk.char_start + offset)
    return list(chunk.section_spans[held[-1]].heading_path if held else chunk.heading_path)


def locate(chunk: Chunk, offset: int) -> Location:
    """Resolve chunk-relative character ``offset`` to its :class:`Location` (never raises for any int)."""
    return Location(page_at(chunk, offset), label_at(chunk, offset), section_at(chunk, offset),
                    heading_path_at(chunk, offset))
