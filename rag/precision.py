"""How the project's MiniLM-sized models run their matrix products on a CPU: bfloat16 autocast where the CPU
multiplies bf16 natively (AMX tiles or AVX512-BF16; emulated bf16 is slower than fp32), or dynamic int8 for the
feed-forward linears. Shared by the embedder (rag/embedding_backends.py), the reranker (rag/reranker.py), the judge's
cross-encoders (eval/judges/nli.py) and judge training (judge_train/train.py). torch is imported lazily: the CLI's
parser imports the modules that import this one."""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from corpora.errors import UsageError

PRECISIONS = ("auto", "bf16", "int8", "fp32")


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AMX tiles or AVX512-BF16)."""
    try:
        import torch  # noqa: PLC0415 - lazy, see the module's docstring
    except ImportError:
        return False
    probes = [getattr(torch.cpu, name, None) for name in ("_is_amx_tile_supported", "_is_avx512_bf16_supported")]
    return any(bool(p()) for p in probes if p is not None)


def resolve_precision(precision: str | None, env: str, native: Callable[[], bool] | None = None) -> str:
    """The precision a CPU model runs in: ``precision``, else ``$env``, else auto (bf16 where the CPU multiplies bf16
    natively, ``native()``, int8 elsewhere). An unknown name is a usage error (one line)."""
    name = (precision or os.environ.get(env) or "auto").strip().lower()
    if name not in PRECISIONS:
        raise UsageError(f"{env}={name!r}: expected one of {', '.join(PRECISIONS)}")
    if name == "auto":
        return "bf16" if (native or native_bf16)() else "int8"
    return name


def bf16_autocast(device: str = "cpu", on: bool = True) -> AbstractContextManager:
    """torch's bfloat16 autocast for ``device`` ('cpu', 'cuda', 'cuda:0'...) when ``on``, else a no-op context.
    Matrix products run in bf16 with fp32 accumulation; layer norms, softmax and losses stay fp32."""
    if not on:
        return nullcontext()
    import torch  # noqa: PLC0415 - lazy

    return torch.autocast(device_type="cuda" if str(device).startswith("cuda") else "cpu", dtype=torch.bfloat16)


def cross_encoder_logits(model, pairs: list[tuple[str, str]], batch_size: int, *, autocast: bool = False):
    """A sentence-transformers CrossEncoder's raw logits for ``pairs`` (numpy, float32), under bf16 autocast when
    ``autocast``. Never its activation: predict(activation_fn=None) applies the head's own (a Sigmoid on a 1-logit head
    since sentence-transformers 4), and a caller that applies a sigmoid itself would apply a second one."""
    import torch  # noqa: PLC0415 - lazy

    with bf16_autocast("cpu", on=autocast):
        return model.predict(pairs, batch_size=batch_size, show_progress_bar=False, convert_to_numpy=True,
                             activation_fn=torch.nn.Identity())


def _is_ffn(name: str) -> bool:
    """The feed-forward linears of a BERT-style layer (2/3 of its matmul work). Only these are quantised: with the
    attention projections and the head as well, the judge's held-out AUROC fell from 0.917 to 0.897 (FFN: 0.912)."""
    return name.endswith("intermediate.dense") or (name.endswith("output.dense") and "attention" not in name)


def quantize_ffn(model) -> bool:
    """Quantise a loaded CPU sentence-transformers model's (or a bare transformers model's) feed-forward linears to
    int8 in place (dynamic, per channel); False when it stays as it was (on a GPU, no such layers, no eager int8)."""
    try:
        import torch  # noqa: PLC0415 - lazy

        inner = model[0] if hasattr(model, "__getitem__") else model  # sentence-transformers' Transformer module
        target = inner.model if hasattr(inner, "model") else inner
        if next(target.parameters()).device.type != "cpu":
            return False
        ffn = [n for n, m in target.named_modules() if isinstance(m, torch.nn.Linear) and _is_ffn(n)]
        if not ffn:
            return False
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            qconfig = torch.ao.quantization.per_channel_dynamic_qconfig
            quantized = torch.ao.quantization.quantize_dynamic(target, {n: qconfig for n in ffn}, dtype=torch.qint8)
        if hasattr(inner, "model"):
            inner.model = quantized
        return True
    except Exception:  # noqa: BLE001 - a torch without eager int8: stays fp32 (slower, scores within ~0.01)
        return False
