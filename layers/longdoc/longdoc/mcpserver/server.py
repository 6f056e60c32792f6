"""The MCP server object: longdoc's tools and resources on :class:`mcp.server.mcpserver.MCPServer` (SDK 2.x).

:func:`build_server` registers every tool of :data:`TOOLS` (input schema from its argument model,
:func:`~longdoc.mcpserver.args.model_signature`) and the resources ``longdoc://doc/{doc_id}`` and
``longdoc://chunk/{chunk_id}``. A tool answers a JSON object, as text and as structured content.
A failure is an MCP tool error (``isError: true``, MCP spec "Tools", error handling) whose text is
one line: the domain's reason (unknown document, not READY, unknown clause type, a bad file), or
the arguments at fault; never a stack trace (an unexpected crash says only that, and is logged
on the server's stderr by the SDK). Arguments are checked before the SDK sees them
(:func:`~longdoc.mcpserver.wording.check_arguments`: an unknown argument or a value of the wrong
JSON type is refused, naming it), and messages written for the CLI are worded for a tool's caller
(:func:`~longdoc.mcpserver.wording.mcp_wording`: argument names for flags, tools for commands).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import MCPServer, ResourceSecurity
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ValidationError

from longdoc.core.errors import OUTAGE_RETRY_AFTER_SECONDS, OUTAGES, InvalidToolArguments, LongdocError
from longdoc.core.text import one_line
from longdoc.extract.runs import ExtractionRequest
from longdoc.mcpserver import args as a
from longdoc.mcpserver import tools as t
from longdoc.mcpserver.wording import check_arguments, errors_line, mcp_wording
from longdoc.summarize.models import SummaryRequest
from longdoc.triage.service import TriageRequest

SERVER_NAME = "longdoc"

INSTRUCTIONS = (
    "longdoc reads long documents (contracts, policy wordings) and answers with verbatim, verified quotes, "
    "each cited to its chunk, physical page, printed page label and section. Find documents with "
    "list_documents (ingest adds one), look things up with search_chunks / get_chunk / get_page_text, and "
    "extract clause types (list_clause_types) with extract, then poll get_run until done is true "
    "(a STALE run: resume_run). "
    "summarize / get_summary and triage / get_triage work the same way. Quote only text the tools returned.")


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, argument model, function and description (the first sentence is the summary line)."""

    name: str
    model: type[BaseModel]
    fn: Callable[[Any], dict[str, Any]]
    description: str
    read_only: bool = True


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("list_documents", a.ListDocumentsArgs, t.list_documents,
             "List the ingested documents. Returns documents: [{doc_id, doc_version, source, pages, chunks, "
             "status (READY|INGESTING|FAILED|DELETED), reason, collection, doc_type, line_of_business, term}]."),
    ToolSpec("ingest", a.IngestArgs, t.ingest,
             "Ingest a file (PDF, DOCX, HTML, Markdown, text) from the server's disk: parse, chunk, embed, index. "
             "Returns the document row plus reused/skipped, or status INGESTING for a slow file (poll list_documents).",
             read_only=False),
    ToolSpec("search_chunks", a.SearchArgs, t.search_chunks,
             "Search one document's chunks (hybrid dense + BM25, the extraction model's own search). "
             "Returns chunks best first: {chunk_id, page_start, page_end, page_labels, section_id, section_ids, "
             "heading_path, token_count, text}."),
    ToolSpec("get_chunk", a.ChunkArgs, t.get_chunk,
             "Get one chunk by id (from search_chunks or a citation). Returns the chunk with its text, pages, "
             "printed page labels, section ids and heading path."),
    ToolSpec("get_page_text", a.PageArgs, t.get_page_text,
             "Get the indexed text of one physical page of a document. Returns {doc_id, doc_version, page, "
             "page_label, text} (running headers and footers removed)."),
    ToolSpec("list_clause_types", a.NoArgs, t.list_clause_types,
             "List the clause types extract accepts. Returns clause_types: [{name, description, answer_kind}]."),
    ToolSpec("extract", ExtractionRequest, t.extract,
             "Start extracting clause types from a READY document, with optional exact facts. Returns at once "
             "with run_id (poll get_run); the same request again returns the same run.", read_only=False),
    ToolSpec("get_run", a.RunArgs, t.get_run,
             "Get an extraction run. Returns status (STALE: its worker died, see resume_run), done, progress "
             "{found, not_found, pending, sessions} so far, extractions [{clause_type, status found|not_found, "
             "clause_text, citations [{chunk_id, page, page_label, section_id, heading_path, quote}]}], usage "
             "and cost_usd."),
    ToolSpec("resume_run", a.RunArgs, t.resume_run,
             "Resume a STALE or FAILED extraction run from its checkpoint (nothing extracted is repeated). "
             "Returns at once with run_id and status RUNNING (poll get_run).", read_only=False),
    ToolSpec("summarize", SummaryRequest, t.summarize,
             "Start a cited summary of a READY document (optional focus, length short|medium|long). Returns at "
             "once with summary_id (poll get_summary).", read_only=False),
    ToolSpec("get_summary", a.SummaryIdArgs, t.get_summary,
             "Get a summary. Returns status (STALE: its worker died, send summarize again) and done; when done, "
             "statements [{text, citations [{section_id, "
             "page, page_label, chunk_id}]}], exact_values, dropped, usage and cost_usd."),
    ToolSpec("triage", TriageRequest, t.triage,
             "Triage an insurance claim against the policy wording in force in a collection. Returns triage_id "
             "with status and, when done within the call, result {decision, reasons, citations, band, budget}.",
             read_only=False),
    ToolSpec("get_triage", a.TriageIdArgs, t.get_triage,
             "Get a triage started by triage. Returns status (RUNNING|SUCCEEDED|FAILED), done, and result or error."),
)
"""Every tool, in the order clients list them."""

_SPECS = {spec.name: spec for spec in TOOLS}


def summary_line(spec: ToolSpec) -> str:
    """The first sentence of a tool's description (``make demo`` prints it)."""
    return spec.description.split(". ")[0].rstrip(".") + "."


def _reason(exc: BaseException, fields: list[str]) -> str:
    """One line saying why a tool call failed, for the caller (never a traceback), in MCP wording."""
    if isinstance(exc, ValidationError):
        return errors_line(exc)
    if isinstance(exc, OSError):
        return one_line(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc), 500)
    if isinstance(exc, OUTAGES):  # not the caller's fault: say so, and when to try again
        return one_line(f"service unavailable ({type(exc).__name__}), retry after {OUTAGE_RETRY_AFTER_SECONDS} s: "
                        f"{exc}", 500)
    return mcp_wording(one_line(str(exc), 500), fields) or type(exc).__name__


def _tool(spec: ToolSpec) -> Callable[..., Any]:
    """The SDK-facing function of ``spec``: known failures raised as :class:`ToolError` with one line,
    the answer as JSON text plus structured content."""

    def body(arguments: dict[str, Any]) -> CallToolResult:
        try:
            answer = spec.fn(spec.model.model_validate(arguments))
        except (LongdocError, OSError, ValueError) as exc:  # ValidationError is a ValueError
            raise ToolError(_reason(exc, list(spec.model.model_fields))) from None
        text = json.dumps(answer, ensure_ascii=False, default=str)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=json.loads(text))

    return a.model_signature(spec.model, body, spec.name)


class LongdocMCP(MCPServer[Any]):
    """:class:`MCPServer` whose tool errors are one line: the SDK prefixes ``Error executing tool <name>: ``
    and prints pydantic's multi-line report for bad arguments; here the reason alone is kept."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Call a tool (:meth:`MCPServer.call_tool`) after :func:`check_arguments`; a :class:`ToolError` comes
        back with a one-line reason."""
        spec = _SPECS.get(name)
        if spec is not None:
            try:
                check_arguments(name, spec.model, arguments or {})
            except ValidationError as exc:
                raise ToolError(errors_line(exc)) from None
            except InvalidToolArguments as exc:
                raise ToolError(str(exc)) from None
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise UnexpectedToolError(f"tool {name} failed with an internal error; the server's log has the details") \
                from None
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(errors_line(cause)) from None
            raise ToolError(one_line(str(exc).removeprefix(f"Error executing tool {name}: "), 500)) from None


def _resource(read: Callable[[str], dict[str, Any]]) -> Callable[[str], str]:
    """A resource reader answering JSON text; a missing document or chunk is a :class:`ResourceError` with one line."""

    def reader(key: str) -> str:
        try:
            return json.dumps(read(key), ensure_ascii=False, default=str)
        except (LongdocError, OSError, ValueError) as exc:
            raise ResourceError(_reason(exc, [])) from None

    return reader


def _doc_resource(doc_id: str) -> dict[str, Any]:
    record = t.ready(doc_id)
    return t.document_row(record) | {"chunk_list": [t.chunk_view(c, text=False) for c in t.chunks_of(record)]}


def _plain_root_logging() -> None:
    """Give the root logger one plain stderr handler at WARNING, unless it has handlers already.

    The SDK's server calls :func:`logging.basicConfig` with a rich-text handler at the level it is
    given; with a handler in place that call does nothing, so the SDK's warnings and crash reports
    still reach stderr, plainly, and Werkzeug, finding no handler for its INFO access lines, keeps
    its own as before (``longdoc serve``'s output is unchanged).
    """
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter("%(name)s: %(levelname)s: %(message)s"))
        root.addHandler(handler)


def build_server() -> LongdocMCP:
    """A new server with every tool of :data:`TOOLS` and the document and chunk resources (nothing is opened yet:
    stores and models are built by :mod:`longdoc.wiring` on the first call that needs them)."""
    _plain_root_logging()
    server = LongdocMCP(SERVER_NAME, title="longdoc: cited clause extraction", instructions=INSTRUCTIONS,
                        version="0.1.0", log_level="WARNING")
    for spec in TOOLS:
        server.add_tool(_tool(spec), name=spec.name, description=spec.description,
                        annotations=ToolAnnotations(read_only_hint=spec.read_only, open_world_hint=False))
    doc_reader, chunk_reader = _resource(_doc_resource), _resource(lambda cid: t.get_chunk(a.ChunkArgs(chunk_id=cid)))

    def document(doc_id: str) -> str:
        return doc_reader(doc_id)

    def chunk(chunk_id: str) -> str:
        return chunk_reader(chunk_id)

    server.resource("longdoc://doc/{doc_id}", name="document", mime_type="application/json",
                    description="A document's READY version: its row (as list_documents) and its chunk list "
                                "(ids, pages, labels, sections, heading paths; no text)")(document)
    # A chunk id is looked up in the registry, never used as a path; exempt from the SDK's path checks, which
    # read a one-letter document id's ``a:1f2e...`` as a Windows drive.
    server.resource("longdoc://chunk/{chunk_id}", name="chunk", mime_type="application/json",
                    security=ResourceSecurity(exempt_params={"chunk_id"}),
                    description="One chunk with its text, pages, printed labels, sections and heading path")(chunk)
    return server
