"""How a sentence-transformers embedder runs: ``torch`` (fp32, the default) or ``torch-bf16`` (the same weights under
torch's bfloat16 autocast: matrix products in bf16 - AMX / AVX512-BF16 kernels on CPUs that have them, about 3x the
passages/s of fp32 there - while layer norms, softmax and pooling stay fp32; vectors are re-normalised in fp32).

Before a non-default backend embeds anything, it is checked against fp32 on fixed sentences: every cosine must be at
least ``MIN_COSINE`` or the embedder refuses with one line. A passing check is remembered in the cache folder
(``models/embedding-backends.json``, keyed by model, backend, torch version and device), so it runs once per setup.
bench/embeddings.py measures speed and retrieval quality per backend (and the int8 candidates that did not make it).
"""
from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rag import models
from rag.precision import bf16_autocast

BACKENDS = ("torch", "torch-bf16")
DEFAULT_BACKEND = "torch"
MIN_COSINE = 0.99
CHECK_SENTENCES = (
    "The mitochondria is the powerhouse of the cell.",
    "Retrieval-augmented generation grounds a language model's answer in retrieved passages.",
    "What year did the Berlin Wall fall?",
    "Aspirin irreversibly inhibits cyclooxygenase, reducing prostaglandin synthesis.",
    "A faiss IVF index probes a few inverted lists instead of scanning every vector.",
    "She sold seashells by the seashore on a windy Tuesday afternoon.",
    "Vitamin D deficiency is associated with an increased risk of bone fractures in older adults.",
    "ok",
)


def check_backend_name(backend: str) -> str:
    """``backend`` itself, or ValueError naming the known ones."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown embedding backend {backend!r}: one of {', '.join(BACKENDS)}")
    return backend


def autocast(backend: str, device: str) -> AbstractContextManager:
    """The context a batch is encoded under: bf16 autocast for ``torch-bf16``, nothing for fp32."""
    return bf16_autocast(device, on=backend == "torch-bf16")


def _record_path() -> Path:
    return models.cache_dir() / "models" / "embedding-backends.json"


def _record_key(model_id: str, backend: str, device: str) -> str:
    import torch  # noqa: PLC0415 - lazy

    return f"{model_id}|{backend}|torch {torch.__version__}|{device}"


def _read_records() -> dict:
    return models.read_cache_json(_record_path())


def _write_record(key: str, entry: dict) -> None:
    path = _record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = _read_records()
    data[key] = entry
    models.write_cache_json(path, data, indent=2)


def agreement(reference: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two sets of vectors (any norms)."""
    ref = reference / np.maximum(np.linalg.norm(reference, axis=1, keepdims=True), 1e-12)
    cand = candidate / np.maximum(np.linalg.norm(candidate, axis=1, keepdims=True), 1e-12)
    return np.sum(ref * cand, axis=1)


def verify_backend(model_id: str, backend: str, device: str, *, fp32: Callable[[list[str]], np.ndarray],
                   candidate: Callable[[list[str]], np.ndarray]) -> float | None:
    """Check ``candidate`` (the backend's encoder) against ``fp32`` on :data:`CHECK_SENTENCES`; the lowest cosine,
    or None for the fp32 backend itself. Raises ModelUnavailable (one line) when any cosine is under MIN_COSINE.
    A pass is recorded in the cache folder and not re-run for the same model, backend, torch and device."""
    if backend == DEFAULT_BACKEND:
        return None
    key = _record_key(model_id, backend, device)
    known = _read_records().get(key)
    if isinstance(known, dict) and known.get("passed") and isinstance(known.get("min_cosine"), float):
        return float(known["min_cosine"])
    sentences = list(CHECK_SENTENCES)
    cos = agreement(np.asarray(fp32(sentences), dtype=np.float64), np.asarray(candidate(sentences), dtype=np.float64))
    low = float(np.min(cos)) if np.all(np.isfinite(cos)) else float("nan")
    if not low >= MIN_COSINE:  # NaN fails too
        worst = int(np.nanargmin(cos)) if np.any(np.isfinite(cos)) else 0
        raise models.ModelUnavailable(
            f"embedding backend {backend} of {model_id} disagrees with fp32: cosine {low:.4f} < {MIN_COSINE} on "
            f"check sentence {worst + 1} ({sentences[worst][:40]!r}); refusing it (use embedding.backend = 'torch')")
    _write_record(key, {"passed": True, "min_cosine": low, "sentences": len(sentences),
                        "checked_at": datetime.now(UTC).isoformat(timespec="seconds")})
    return low
