"""The rerank stage: a cross-encoder reads each (passage, question) pair of the first stage's best candidates and
reorders them, alone (weight 1) or interpolated with the first stage's normalised score.

The default model, ``rerank-minilm`` (eval/judges/weights/rerank-minilm-v1, its MODEL_CARD.md), is a MiniLM-L6
cross-encoder (one logit) trained listwise to put the passage that bears on a query above BM25-mined and
judged-irrelevant near misses (Factcheck-GPT, AttributionBench, SciTail, HaluEval-QA, QNLI; never SciFact or
Cranfield), from the judge's relevance model, which stays available as ``relevance-minilm``. Both ship with the
judges; this module finds their folders by path (rag/ does not import eval/) and loads them offline. On a CPU the
model runs in bf16 autocast where the CPU multiplies bf16 natively (AMX, AVX512-BF16), else with its feed-forward
layers in int8 (rag/precision.py); ``$RAGDOCTOR_RERANK_PRECISION`` (auto, bf16, int8, fp32) overrides the choice."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from corpora.digest import folder_digest
from corpora.errors import warn
from rag.config import RetrievalConfig
from rag.embeddings import quiet_model_loading
from rag.fusion import interpolate
from rag.models import ModelUnavailable
from rag.precision import cross_encoder_logits, quantize_ffn, resolve_precision

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS = ROOT / "eval" / "judges" / "weights"
MODELS = {"rerank-minilm": WEIGHTS / "rerank-minilm-v1",  # trained to rank (listwise), the default
          "relevance-minilm": WEIGHTS / "groundedness-minilm-v5" / "relevance"}  # the judge's pairwise relevance model
DEFAULT_RERANKER: str = RetrievalConfig.model_fields["reranker"].default  # one default, rag/config.py's
PRECISION_ENV = "RAGDOCTOR_RERANK_PRECISION"


class RerankerUnavailable(ModelUnavailable):
    """The reranker's folder is missing or cannot be loaded (one-line message)."""


def model_dir(name: str) -> Path:
    """The folder of ``name``: a registered name, else a sentence-transformers CrossEncoder folder."""
    path = MODELS.get(name, Path(name))
    if not (path / "config.json").is_file():
        raise RerankerUnavailable(f"reranker {name!r}: no cross-encoder folder at {path} (config.json missing)")
    return path


class CrossEncoderReranker:
    """Scores (passage, question) pairs with a 1-logit CrossEncoder; loaded on first use, shared across threads."""

    def __init__(self, name: str = DEFAULT_RERANKER, *, max_length: int = 160, batch_size: int = 32,
                 device: str | None = None, precision: str | None = None):
        self.name = name
        self.path = model_dir(name)
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = device
        self.precision = resolve_precision(precision, PRECISION_ENV)  # what it runs in on a CPU (a bad name: now)
        self.quantized = False  # int8 feed-forward in place
        self.device_type = "cpu"  # where the loaded model lives
        self._model = None
        self._lock = threading.Lock()

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import CrossEncoder  # noqa: PLC0415 - lazy, as torch

                    with quiet_model_loading():
                        self._model = CrossEncoder(str(self.path), max_length=self.max_length, device=self.device,
                                                   local_files_only=True)
                except Exception as exc:  # noqa: BLE001 - any load failure is one line
                    raise RerankerUnavailable(f"reranker {self.name!r} at {self.path}: {type(exc).__name__}: "
                                              f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
                self.device_type = next(self._model.parameters()).device.type
                self.quantized = self.runs_in == "int8" and quantize_ffn(self._model)
            return self._model

    @property
    def model_id(self) -> str:
        """The model as a resume and a cache must tell it apart: a bundled reranker by its name, a folder of the user's
        by its path and a digest of its files (weights replaced in place are another model)."""
        if self.name in MODELS:
            return self.name
        return f"{self.path.resolve()}@{folder_digest(self.path)}"  # one directory walk (the digest is cached)

    @property
    def runs_in(self) -> str:
        """What the model runs in: its CPU precision, or the device it was loaded on ('cuda': as loaded)."""
        return self.precision if self.device_type == "cpu" else self.device_type

    @property
    def will_run_in(self) -> str:
        """``runs_in``, known before the model loads: the device it will be placed on (the one asked for, else the
        one sentence-transformers picks when loading it) or, on a CPU, its precision."""
        if self._model is not None:
            return self.runs_in
        import torch  # noqa: PLC0415 - lazy, as above
        from sentence_transformers.util import get_device_name  # noqa: PLC0415 - the choice CrossEncoder makes

        kind = torch.device(self.device or get_device_name()).type
        return self.precision if kind == "cpu" else kind

    @property
    def autocast(self) -> bool:
        """Whether each batch runs under bf16 autocast (on a CPU, in bf16)."""
        return self.runs_in == "bf16"

    def score(self, question: str, passages: list[str]) -> np.ndarray:
        """One logit per passage (higher: more relevant to ``question``)."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        pairs = [(p, question) for p in passages]  # the order it was trained in: passage first, question second
        out = cross_encoder_logits(self.model, pairs, self.batch_size, autocast=self.autocast)
        return np.asarray(out, dtype=np.float32).reshape(-1)


def rerank_order(first: list[float], rerank: list[float], weight: float) -> tuple[list[int], list[float]]:
    """Positions of the candidates in their new order and each one's combined score (same order): ``weight`` 1 sorts
    by the reranker alone, below 1 by the interpolation of the min-max normalised scores. Ties keep the first stage's
    order."""
    combined = list(map(float, rerank)) if weight == 1.0 else interpolate(first, rerank, weight)
    order = sorted(range(len(combined)), key=lambda i: (-combined[i], i))
    return order, [combined[i] for i in order]


class RerankStage:
    """Reranks the first ``depth`` hits of a first-stage list in place of their order; the hits below keep theirs.

    Each reranked hit's score becomes the combined score; its signals gain ``rerank_score`` (the logit),
    ``first_stage_rank`` and ``first_stage_score``."""

    def __init__(self, cfg: RetrievalConfig, reranker: CrossEncoderReranker | None = None):
        self.depth = cfg.rerank_depth
        self.weight = cfg.rerank_weight
        self.reranker = reranker or CrossEncoderReranker(cfg.reranker, max_length=cfg.rerank_max_length)
        self.last_ms = 0.0

    def apply(self, question: str, hits: list, passage_of) -> list:
        """``hits`` (objects with ``score`` and ``signals``, best first) reordered; ``passage_of(hit)`` is its text:
        the chunk's text alone, as the model was trained (passage windows, no title line: on a bundled question a
        "title\ntext" passage read -4.8 where the text alone read +0.6). A NaN or inf logit leaves ``hits`` as they
        came (with a warning): no order can be read from it, and no NaN may reach a trace."""
        t = time.perf_counter()
        head, tail = hits[: self.depth], hits[self.depth:]
        logits = self.reranker.score(question, [passage_of(h) for h in head])
        if not np.isfinite(logits).all():  # NaN or inf: no order to read from it, and NaN in a trace reads back as null
            warn(f"reranker {getattr(self.reranker, 'name', '?')!r} scored a passage NaN or inf: that question keeps "
                 f"the first stage's order and scores (no rerank_score)")
            self.last_ms = (time.perf_counter() - t) * 1000
            return hits
        order, combined = rerank_order([h.score for h in head], logits.tolist(), self.weight)
        out = []
        for new_score, i in zip(combined, order):
            h = head[i]
            h.signals = {**h.signals, "rerank_score": float(logits[i]), "first_stage_rank": float(i + 1),
                         "first_stage_score": float(h.score)}
            h.score = new_score
            out.append(h)
        self.last_ms = (time.perf_counter() - t) * 1000
        return out + tail
