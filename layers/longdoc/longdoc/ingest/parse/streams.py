"""Damaged compressed streams in a PDF's bytes, and the pages whose content they are (issue 27).

PDFium does not report a content stream that fails to decompress: its Flate decoder keeps what
it decoded before the error and draws that, so a page with 200 random bytes in its compressed
content comes out short (2,443 characters down to 44) or with decoded garbage (content-stream
operators such as ``0.0224 Tc 0 Tw`` inside the text), and no PDFium call says so. pypdfium2 gives
no access to raw stream bytes either. So this module reads the file itself, as far as needed:

* every indirect object ``N G obj ... endobj`` in the bytes (the last definition of a number
  wins, as with incremental updates), and the objects packed in object streams
  (``/Type /ObjStm``, ISO 32000-1, 7.5.7);
* every stream whose first filter is ``/FlateDecode`` (ISO 32000-1, 7.4.4) is inflated with zlib
  (RFC 1950: a zlib stream ends with an Adler-32 checksum, so damage anywhere in it shows as an
  error or a stream that never ends);
* the page tree from the catalog's ``/Pages`` (``/Kids``, ISO 32000-1, 7.7.3.2) gives each page's
  ``/Contents`` streams, so a damaged content stream names its page.

Only when the page tree found has as many pages as PDFium counts are pages named; a damaged stream
that is no page's content (a font, an image, a form) is reported by object number. This is a
reading of the file's syntax for diagnosis only: the text always comes from PDFium.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field

from longdoc.ingest.parse.pdfcrypt import Decrypt, pdf_string, stream_decrypter

_OBJ = re.compile(rb"(?<![0-9])(\d{1,10})\s+(\d{1,5})\s+obj\b")
_ENDOBJ = re.compile(rb"\bendobj\b")
_STREAM = re.compile(rb"\bstream(?:\r\n|\n|\r)")
_ENDSTREAM = re.compile(rb"(?:\r\n|\n|\r)?endstream\b")
_REF = re.compile(rb"(\d{1,10})\s+\d{1,5}\s+R\b")
_FIRST_FILTER = re.compile(rb"/Filter\s*\[?\s*/(\w+)")
_MAX_INFLATE = 64 * 1024 * 1024
"""Bytes inflated per stream at most (64 MiB): a bound on the memory a crafted stream can take."""


@dataclass
class StreamDamage:
    """What :func:`find_stream_damage` found: 1-based pages with a damaged content stream (and why),
    and damaged streams that are no page's content, by object number (and why)."""

    pages: dict[int, str] = field(default_factory=dict)
    other: dict[int, str] = field(default_factory=dict)


Objects = dict[int, tuple[bytes, bytes | None]]
"""Object number -> ``(dictionary text, stream bytes, decrypted, or None)``."""


def _decrypter(data: bytes, found: Objects) -> Decrypt | None:
    """The stream decrypter of an encrypted PDF (:mod:`.pdfcrypt`), None when not encrypted.

    Raises ValueError for an encryption this module cannot undo (the file then goes unchecked)."""
    ref = re.search(rb"/Encrypt\s+(\d+)\s+\d+\s+R", data)
    if ref is None:
        return None
    ident = re.search(rb"/ID\s*\[\s*(<[0-9A-Fa-f\s]*>|\()", data)
    encrypt = found.get(int(ref.group(1)), (b"", None))[0]
    first_id = pdf_string(data[ident.start():ident.start() + 400], b"ID\\s*\\[\\s*") if ident else b""
    decrypt = stream_decrypter(encrypt, first_id or b"")
    if decrypt is None:
        raise ValueError("an encryption not handled here")
    return decrypt


def _objects(data: bytes) -> Objects:
    """Object number -> ``(dictionary text, stream bytes or None)`` for every indirect object;
    encrypted streams are decrypted (:mod:`.pdfcrypt`). Raises ValueError when they cannot be."""
    found: Objects = {}
    generations: dict[int, int] = {}
    for m in _OBJ.finditer(data):
        end = _ENDOBJ.search(data, m.end())
        stop = end.start() if end else len(data)
        body = data[m.end():stop]
        s = _STREAM.search(body)
        if s is None:
            found[int(m.group(1))] = (body, None)
            continue
        length = re.search(rb"/Length\s+(\d+)\b(?!\s+\d+\s+R)", body[:s.start()])
        stop_at = s.end() + int(length.group(1)) if length else -1
        if length is None or not re.match(rb"\s*endstream\b", body[stop_at:stop_at + 20]):
            tail = _ENDSTREAM.search(body, s.end())  # no direct /Length, or a wrong one
            stop_at = tail.start() if tail else len(body)
        raw = body[s.end():stop_at]
        found[int(m.group(1))] = (body[:s.start()], raw)
        generations[int(m.group(1))] = int(m.group(2))
    decrypt = _decrypter(data, found)
    if decrypt is not None:
        for number, (dictionary, stream) in found.items():
            if stream is not None and not re.search(rb"/Type\s*/XRef\b", dictionary):  # xref streams are plain
                found[number] = (dictionary, decrypt(number, generations.get(number, 0), stream))
    for dictionary, stream in list(found.values()):
        if stream is not None and re.search(rb"/Type\s*/ObjStm\b", dictionary):
            _unpack_object_stream(dictionary, stream, found)
    return found


def _inflate(dictionary: bytes, raw: bytes) -> tuple[bytes | None, str | None]:
    """``(decoded bytes, None)`` for a whole Flate stream, ``(None, reason)`` for a damaged one,
    ``(None, None)`` for a stream that is not Flate-encoded first (not checked)."""
    first = _FIRST_FILTER.search(dictionary)
    if first is None or first.group(1) not in (b"FlateDecode", b"Fl"):
        return None, None
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(raw, _MAX_INFLATE)
    except zlib.error as exc:
        return None, f"compressed data is corrupt ({exc})"
    if not inflater.eof and not inflater.unconsumed_tail:
        return None, "compressed data ends before the stream does (truncated)"
    return out, None


def _unpack_object_stream(dictionary: bytes, raw: bytes, found: Objects) -> None:
    """Add the objects packed in one object stream to ``found`` (unless defined directly)."""
    decoded, _ = _inflate(dictionary, raw)
    first = re.search(rb"/First\s+(\d+)", dictionary)
    if decoded is None or first is None:
        return
    offset = int(first.group(1))
    numbers = [int(n) for n in re.findall(rb"\d+", decoded[:offset])]
    pairs = list(zip(numbers[0::2], numbers[1::2], strict=False))
    for k, (number, start) in enumerate(pairs):
        stop = pairs[k + 1][1] if k + 1 < len(pairs) else len(decoded) - offset
        found.setdefault(number, (decoded[offset + start:offset + stop], None))


def _refs(text: bytes) -> list[int]:
    """The object numbers of the indirect references ``N G R`` in ``text``."""
    return [int(n) for n in _REF.findall(text)]


def _value(dictionary: bytes, key: bytes) -> bytes | None:
    """The raw text after ``/key`` up to the next key (a reference, an array or a name)."""
    m = re.search(rb"/" + key + rb"\b\s*(\[[^\]]*\]|\d+\s+\d+\s+R|/\w+)", dictionary)
    return m.group(1) if m else None


def _page_contents(objects: Objects) -> list[list[int]] | None:
    """The content stream object numbers of each page, in page order; None without a page tree.

    A page whose dictionary is not in the file, or lacks its ``/Type /Page`` (overwritten), gets
    ``[-N]``, N its object number."""
    catalog = next((d for d, _ in objects.values() if re.search(rb"/Type\s*/Catalog\b", d)), None)
    root = _value(catalog, b"Pages") if catalog is not None else None
    if root is None:
        return None
    pages: list[list[int]] = []
    stack, seen = list(reversed(_refs(root))), set()
    while stack:
        number = stack.pop()
        if number in seen:
            continue
        seen.add(number)
        if number not in objects:  # a page (or node) whose dictionary is lost: kept in the count
            pages.append([-number])
            continue
        dictionary = objects[number][0]
        kids = _value(dictionary, b"Kids")
        if kids is not None and re.search(rb"/Type\s*/Pages\b", dictionary):
            stack.extend(reversed(_refs(kids)))
            continue
        if not re.search(rb"/Type\s*/Page\b", dictionary):  # required in a page (ISO 32000-1, Table 30)
            pages.append([-number])
            continue
        contents = _value(dictionary, b"Contents") or b""
        streams = _refs(contents)
        if len(streams) == 1 and objects.get(streams[0], (b"", b""))[1] is None:  # an array object
            streams = _refs(objects[streams[0]][0])
        pages.append(streams)
    return pages


def find_stream_damage(data: bytes, page_count: int) -> StreamDamage:
    """Check every Flate stream of the PDF ``data`` and name the pages whose content is damaged.

    ``page_count`` is PDFium's page count: pages are named only when the page tree read here has
    as many. Never raises: unreadable syntax yields fewer findings, not an error.
    """
    damage = StreamDamage()
    try:
        objects = _objects(data)
        broken = {}
        for number, (dictionary, raw) in objects.items():
            if raw is not None:
                _, reason = _inflate(dictionary, raw)
                if reason is not None:
                    broken[number] = reason
        contents = _page_contents(objects)
        for streams in contents or []:
            broken.update({s: f"its page object {-s} is missing or damaged" for s in streams if s < 0})
        if not broken:
            return damage
        named: set[int] = set()
        if contents is not None and len(contents) == page_count:
            for page, streams in enumerate(contents, start=1):
                hit = [broken[s] if s < 0 else f"content stream {s}: {broken[s]}" for s in streams if s in broken]
                if hit:
                    damage.pages[page] = hit[0]
                    named.update(s for s in streams if s in broken)
        damage.other = {n: r for n, r in broken.items() if n not in named and n > 0}
    except (ValueError, IndexError, RecursionError):  # pragma: no cover - a syntax we cannot follow
        return damage
    return damage
