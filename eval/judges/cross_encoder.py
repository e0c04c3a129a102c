"""NLI / cross-encoder scorer over any sentence-transformers ``CrossEncoder`` folder.

Heads understood: 3 labels (entailment / neutral / contradiction, order read from the model's id2label) or a
single supported-score logit (sigmoid). Batched, deterministic (eval mode, no sampling)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eval.judges.base import JudgeUnavailable, Support
from rag.precision import cross_encoder_logits


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class CrossEncoderScorer:
    family = "nli"

    def __init__(self, model_dir: str | Path, *, name: str = "nli", batch_size: int = 32, max_length: int = 256,
                 device: str | None = None, support_threshold: float = 0.5, relevance_threshold: float = 0.5):
        self.model_dir = Path(model_dir)
        if not self.model_dir.exists():
            raise JudgeUnavailable(f"cross-encoder folder not found: {self.model_dir}")
        self.name = name
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self.support_threshold = support_threshold
        self.relevance_threshold = relevance_threshold
        self._model = None
        self._labels: dict[str, int] | None = None
        self.autocast_bf16 = False  # run the CPU matmuls in bfloat16 (eval/judges/nli.py sets it where it is native)

    @property
    def model(self):
        if self._model is None:
            from sentence_transformers import CrossEncoder

            from rag.embeddings import quiet_model_loading

            with quiet_model_loading():
                self._model = CrossEncoder(str(self.model_dir), max_length=self.max_length, device=self.device,
                                           local_files_only=True)
            id2label = getattr(self._model.model.config, "id2label", {}) or {}
            n = int(getattr(self._model.model.config, "num_labels", 1))
            if n == 1:
                self._labels = {}
            else:
                names = {int(i): str(l).lower() for i, l in id2label.items()}
                find = lambda key: next((i for i, l in names.items() if l.startswith(key)), None)  # noqa: E731
                ent, con = find("entail"), find("contradict")
                if ent is None:
                    raise JudgeUnavailable(f"{self.model_dir}: {n}-label head without an 'entailment' label ({names})")
                self._labels = {"entailment": ent, **({"contradiction": con} if con is not None else {})}
        return self._model

    def load(self) -> CrossEncoderScorer:
        """Load the model now (it loads on first use otherwise): a folder that is no model fails here."""
        _ = self.model
        return self

    def count_truncated(self, pairs: list[tuple[str, str]]) -> int:
        """How many pairs are longer than ``max_length`` tokens together (the model never sees their end)."""
        return sum(self.cut_flags(pairs))

    def cut_flags(self, pairs: list[tuple[str, str]]) -> list[bool]:
        """Each pair: longer than ``max_length`` tokens together (the model never sees its end)."""
        if not pairs:
            return []
        tok = self.model.tokenizer
        # counting on purpose past max_length: verbose=False keeps transformers' "longer than the maximum" warning
        # (meant for a sequence about to be run) off the user's screen
        enc = tok([p for p, _ in pairs], [h for _, h in pairs], truncation=False, add_special_tokens=True,
                  verbose=False)
        return [len(ids) > self.max_length for ids in enc["input_ids"]]

    def _predict(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        if not pairs:
            return np.zeros((0,))
        # raw logits: support() applies the sigmoid (or the softmax) itself
        raw = cross_encoder_logits(self.model, pairs, self.batch_size, autocast=self.autocast_bf16)
        return np.asarray(raw, dtype=np.float64)

    def support(self, pairs: list[tuple[str, str]]) -> list[Support]:
        if not pairs:
            return []
        raw = self._predict(pairs)
        if not self._labels:
            probs = 1 / (1 + np.exp(-raw.reshape(-1)))
            return [Support(float(p)) for p in probs]
        p = _softmax(raw.reshape(len(pairs), -1))
        ent, con = self._labels["entailment"], self._labels.get("contradiction")
        return [Support(float(row[ent]), None if con is None else float(row[con])) for row in p]

    @staticmethod
    def relevance_reads(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
        """The (premise, hypothesis) pairs the model reads for (question, passage) ``pairs``: the passage as premise,
        the question as hypothesis."""
        return [(passage, question) for question, passage in pairs]

    def relevance(self, pairs: list[tuple[str, str]]) -> list[float]:
        """Does the passage bear on the question (``relevance_reads``)."""
        return [s.supported for s in self.support(self.relevance_reads(pairs))]
