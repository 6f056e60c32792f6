"""The eval cache: documents ingested once with the local adapters, per chunk size and chunker code.

Layout under ``$LONGDOC_HOME/eval/chunks-<target>-<max>-<fingerprint>[-<embedder>]/``: ``bucket/``
(blob folder; each ingested corpus file is kept there under its relative path too, as an
ingest needs its object), ``state.sqlite3`` (registry), ``lancedb/`` (vectors). Re-runs find
the versions READY and skip them; a change to the parser or chunker gets a fresh folder
(:func:`chunker_fingerprint`), and so does another local embedder variant
(``LONGDOC_LOCAL_EMBEDDER``; the PyTorch MiniLM keeps the folder name it always had).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from longdoc.core.models import Chunk
from longdoc.core.ports import BlobStore, Embedder, StateStore, VectorIndex

NAIVE_CHARS = 1000
"""Size in characters of the naive baseline's fixed chunks (see :mod:`longdoc.eval.retrieval`)."""


def chunker_fingerprint() -> str:
    """8 hex digits of a SHA-256 over the source of the parsing and chunking modules.

    The eval cache keeps each document's chunks and vectors under a folder named with it,
    so a change to the parser or chunker is measured on fresh chunks, never on chunks cut
    by the previous code (an ingested version is otherwise reused as it stands).
    """
    import importlib
    import inspect
    import pkgutil

    from longdoc.core import text, tokens
    from longdoc.ingest import chunk, parse

    modules = [tokens, text]
    for package in (parse, chunk):
        modules.append(package)
        modules += [importlib.import_module(f"{package.__name__}.{m.name}")
                    for m in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name)]
    digest = hashlib.sha256()
    for module in modules:
        digest.update(inspect.getsource(module).encode("utf-8"))
    return digest.hexdigest()[:8]


def store_root(home: Path, target: int, maximum: int, embedder_name: str | None = None) -> Path:
    """The eval cache folder for one chunk size (``target``/``maximum`` tokens), the current chunker code
    and one local embedder (``embedder_name``, default: the configured ``LONGDOC_LOCAL_EMBEDDER``'s).

    Ingested versions are reused as they stand, vectors included, so two embedders never
    share a folder: any but the PyTorch MiniLM (``all-MiniLM-L6-v2``, the folder's
    original name) adds ``-<embedder name>``.
    """
    name = embedder_name or _default_embedder().name
    suffix = "" if name == "all-MiniLM-L6-v2" else "-" + re.sub(r"[^A-Za-z0-9._-]+", "_", name)
    return home / "eval" / f"chunks-{target}-{maximum}-{chunker_fingerprint()}{suffix}"


def _default_embedder() -> Embedder:
    """The configured local embedder (``LONGDOC_LOCAL_EMBEDDER``; nothing loaded yet)."""
    from longdoc.wiring import local_embedder

    return local_embedder()


@dataclass
class EvalStore:
    """The local adapters of the eval cache (layout in the module docstring), created on construction.

    ``blobs`` is a folder, ``state`` SQLite, ``embedder`` the configured local MiniLM unless
    given (384 dimensions, loaded on first use; its name should be the one ``root`` was
    made for, :func:`store_root`) and ``index`` LanceDB sized to it.
    """

    root: Path
    target_tokens: int
    max_tokens: int
    embedder: Embedder = field(default_factory=_default_embedder)
    blobs: BlobStore = field(init=False)
    state: StateStore = field(init=False)
    index: VectorIndex = field(init=False)

    def __post_init__(self) -> None:
        """Create the folder and the four adapters (no model is loaded yet)."""
        from longdoc import wiring

        self.blobs, self.state, self.index = wiring.local_stores(self.root, self.embedder.dimension)

    def chunks(self, corpus: Path, rel: str, metadata: dict | None = None) -> list[Chunk]:
        """Ingest ``corpus/rel`` unless its version is READY; return its chunks (from the blob store).

        The doc id is the one ``rel`` is registered under in this cache (an earlier id rule's
        id stays, :func:`~longdoc.ingest.ids.resolve_doc_id`), so a cache filled before keeps serving.

        Raises ``FileNotFoundError`` when the file is missing and the ingest errors of
        :func:`~longdoc.ingest.pipeline.ingest_document` for a document that cannot be read.
        """
        from longdoc.core.documents import load_chunks
        from longdoc.ingest.ids import resolve_doc_id
        from longdoc.ingest.pipeline import IngestDeps, IngestOptions, ingest_document
        from longdoc.ingest.source import IngestSource

        data = (corpus / rel).read_bytes()
        self.blobs.put(rel, data)  # the object an ingest checks is still there before it registers READY
        source = IngestSource(key=rel, data=data, object_metadata=metadata or {}, doc_id=resolve_doc_id(rel, self.state))
        result = ingest_document(source,
                                 IngestDeps(blobs=self.blobs, state=self.state, embedder=self.embedder, index=self.index),
                                 IngestOptions(target_tokens=self.target_tokens, max_tokens=self.max_tokens))
        return load_chunks(self.blobs, result.doc_id, result.doc_version)

    def naive_vectors(self, doc_id: str, doc_version: str, texts: list[str]) -> list[list[float]]:
        """One vector per text of the naive chunks, in order; embedded once and cached by text SHA-256."""
        from longdoc.ingest.embeddings import load_embedding_cache, save_embedding_cache

        key = f"eval/naive/{self.embedder.name}/{NAIVE_CHARS}/{doc_id}/{doc_version}.json"
        cache = load_embedding_cache(self.blobs, key)
        hashes = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        todo = [(h, t) for h, t in dict(zip(hashes, texts, strict=True)).items() if h not in cache]
        if todo:
            vectors = self.embedder.embed_documents([t for _, t in todo])
            for (h, _), v in zip(todo, vectors, strict=True):
                cache[h] = [float(x) for x in v]
            save_embedding_cache(self.blobs, key, self.embedder.name, self.embedder.dimension, cache)
        return [cache[h] for h in hashes]


def document_text(chunks: Sequence[Chunk]) -> str:
    """The parsed document text rebuilt from its chunks (``chunk.text == text[char_start:char_end]``).

    Characters no chunk covers are spaces.
    """
    end = max((c.char_end for c in chunks), default=0)
    buf = [" "] * end
    for c in chunks:
        buf[c.char_start:c.char_end] = list(c.text)
    return "".join(buf)
