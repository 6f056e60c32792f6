"""Damaged compressed streams in a PDF, and the pages whose content they are (issue 27), through pikepdf.

PDFium does not report a content stream that fails to decompress: its Flate decoder keeps what
it decoded before the error and draws that, so a page with 200 random bytes in its compressed
content comes out short (2,443 characters down to 44) or with decoded garbage (content-stream
operators such as ``0.0224 Tc 0 Tw`` inside the text), and no PDFium call says so. So the file is
also opened with pikepdf (qpdf), for diagnosis only: the text always comes from PDFium.

* qpdf parses the objects (repairing a broken cross-reference table), decrypts (an empty user
  password, as PDFium does) and decodes each page's ``/Contents`` streams (a stream or an array of
  them, ISO 32000-1, 7.7.3.3). A decode error, or a qpdf warning recorded while the page was read
  (qpdf often repairs silently and only warns, e.g. "error decoding stream data"), marks the page.
* qpdf does not check the Adler-32 checksum that ends a zlib stream (RFC 1950, 2.2): random bytes
  that still inflate give garbage and no error. So every stream whose first filter is
  ``/FlateDecode`` is also inflated here with :mod:`zlib` from qpdf's decrypted raw bytes: a
  checksum mismatch, a corrupt or a truncated stream marks it.
* A page whose dictionary is lost or lacks ``/Type /Page`` (required, ISO 32000-1, Table 30) is
  damaged; the page tree is walked from ``/Root /Pages`` so such a page keeps its place (the file
  is opened with ``inherit_page_attributes=False``: otherwise qpdf flattens the tree on opening and
  drops such a page with a warning, and the pages after it would shift).

Pages are named only when the page tree read here has as many pages as PDFium counts; a damaged
stream that is no page's content (a font, an image, a form) is reported by object number.
"""

from __future__ import annotations

import io
import re
import zlib
from dataclasses import dataclass, field

import pikepdf

_MAX_INFLATE = 64 * 1024 * 1024
"""Bytes inflated per stream at most (64 MiB): a bound on the memory a crafted stream can take."""
_DAMAGE_WARNING = re.compile(r"decod|without filtering|inflate|endstream|/Length|damaged|unexpected|invalid", re.I)
"""qpdf warnings that mean a stream or object is damaged; others (e.g. "stream keyword followed by
carriage return only", seen on an intact scan in the corpus) are syntax oddities qpdf reads through."""
_PAGE_TYPE = pikepdf.Name("/Page")
_SOURCE = re.compile(r"^stream <[^>]*>\s*:?\s*")
"""qpdf's name for the in-memory file at the start of its messages, dropped from the reasons."""


def _message(text: object) -> str:
    """A qpdf error or warning without qpdf's name for the in-memory file."""
    return _SOURCE.sub("", str(text))


@dataclass
class StreamDamage:
    """What :func:`find_stream_damage` found: 1-based pages with a damaged content stream (and why),
    and damaged streams that are no page's content, by object number (and why)."""

    pages: dict[int, str] = field(default_factory=dict)
    other: dict[int, str] = field(default_factory=dict)


def _inflate_check(stream: pikepdf.Stream) -> str | None:
    """Why the Flate data of ``stream`` is damaged (corrupt, truncated, bad checksum), None when whole
    or when its first filter is not ``/FlateDecode`` (not checked here)."""
    filters = stream.get("/Filter")
    first = filters[0] if isinstance(filters, pikepdf.Array) and len(filters) else filters
    if first not in (pikepdf.Name.FlateDecode, pikepdf.Name("/Fl")):
        return None
    inflater = zlib.decompressobj()
    try:
        inflater.decompress(stream.read_raw_bytes(), _MAX_INFLATE)
    except zlib.error as exc:
        return f"compressed data is corrupt ({exc})"
    if not inflater.eof and not inflater.unconsumed_tail:
        return "compressed data ends before the stream does (truncated)"
    return None


def _stream_check(pdf: pikepdf.Pdf, stream: object) -> str | None:
    """Why one content stream is damaged (qpdf's decode error or warning, or :func:`_inflate_check`), else None."""
    if not isinstance(stream, pikepdf.Stream):
        return "not a stream"
    try:
        stream.read_bytes()
    except pikepdf.PdfError as exc:
        pdf.get_warnings()
        return f"compressed data is corrupt (qpdf: {_message(exc)})"
    warned = [w for w in pdf.get_warnings() if _DAMAGE_WARNING.search(w)]
    if warned:
        return f"stream is damaged (qpdf: {_message(warned[0])})"
    return _inflate_check(stream)


def _leaves(pdf: pikepdf.Pdf) -> list[object]:
    """The page tree's leaves in page order (``/Kids`` from ``/Root /Pages``, ISO 32000-1, 7.7.3.2),
    lost or overwritten ones included (as what is left of them), so every page keeps its place."""
    out: list[object] = []
    stack, seen = [pdf.Root.Pages], set()
    while stack:
        node = stack.pop()
        key = node.objgen if isinstance(node, pikepdf.Object) else (0, 0)
        if key != (0, 0) and key in seen:
            continue
        seen.add(key)
        kids = node.get("/Kids") if isinstance(node, pikepdf.Dictionary) else None
        if isinstance(kids, pikepdf.Array) and node.get("/Type") != _PAGE_TYPE:
            stack.extend(reversed(list(kids)))
        else:
            out.append(node)
    return out


def _page_check(pdf: pikepdf.Pdf, node: object, named: set[tuple[int, int]]) -> str | None:
    """Why one page is damaged, else None; adds its content streams' object ids to ``named``."""
    if not isinstance(node, pikepdf.Dictionary) or node.get("/Type") != _PAGE_TYPE:
        number = f"{node.objgen[0]} " if isinstance(node, pikepdf.Object) and node.objgen[0] else ""
        return f"its page object {number}is missing or damaged"
    contents = node.get("/Contents")
    streams = list(contents) if isinstance(contents, pikepdf.Array) else [] if contents is None else [contents]
    for stream in streams:
        if isinstance(stream, pikepdf.Object):
            named.add(stream.objgen)
        reason = _stream_check(pdf, stream)
        if reason is not None:
            stream_number = stream.objgen[0] if isinstance(stream, pikepdf.Object) else 0
            return f"content stream {stream_number}: {reason}"
    return None


def find_stream_damage(data: bytes, page_count: int) -> StreamDamage:
    """Check the PDF ``data``'s streams (module docstring) and name the pages whose content is damaged.

    ``page_count`` is PDFium's page count: pages are named only when the page tree read here has
    as many. Never raises: a file qpdf cannot open (a password other than the empty one, syntax it
    cannot repair) or follow yields fewer findings, not an error.
    """
    damage = StreamDamage()
    try:
        with pikepdf.open(io.BytesIO(data), password="", inherit_page_attributes=False) as pdf:
            pdf.get_warnings()  # opening: cross-reference repairs, named by no page
            leaves = _leaves(pdf)
            pdf.get_warnings()  # parsing the page objects: a damaged one is told by its /Type, below
            named: set[tuple[int, int]] = set()
            if len(leaves) == page_count:
                for page, node in enumerate(leaves, start=1):
                    try:
                        reason = _page_check(pdf, node, named)
                    except (pikepdf.PdfError, KeyError, AttributeError, ValueError) as exc:
                        reason = f"its page object cannot be read ({_message(exc)})"
                    if reason is not None:
                        damage.pages[page] = reason
            for obj in pdf.objects:
                if isinstance(obj, pikepdf.Stream) and obj.objgen not in named:
                    try:
                        reason = _inflate_check(obj)
                    except pikepdf.PdfError as exc:
                        reason = f"qpdf could not read it ({_message(exc)})"
                    if reason is not None:
                        damage.other[obj.objgen[0]] = reason
    except (pikepdf.PdfError, pikepdf.PasswordError, KeyError, AttributeError, ValueError, RecursionError):
        return damage
    return damage
