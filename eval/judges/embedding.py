"""Embedding-similarity scorer: cosine similarity of sentence embeddings (the bundled MiniLM by default),
clipped to [0, 1]. Good at 'is this about the same thing', blind to negation and swapped numbers."""
from __future__ import annotations

import numpy as np

from eval.judges.base import Support
from eval.mathx import cosine_to_unit


class EmbeddingScorer:
    name = "embedding"
    family = "embedding"

    def __init__(self, embedder, support_threshold: float = 0.7, relevance_threshold: float = 0.35):
        self.embedder = embedder
        self.support_threshold = support_threshold
        self.relevance_threshold = relevance_threshold

    def _cosines(self, pairs: list[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        vecs = self.embedder.embed(texts)
        pos = {t: i for i, t in enumerate(texts)}
        a = vecs[[pos[p] for p, _ in pairs]]
        b = vecs[[pos[h] for _, h in pairs]]
        return [cosine_to_unit(float(c)) for c in np.sum(a * b, axis=1)]

    def support(self, pairs: list[tuple[str, str]]) -> list[Support]:
        return [Support(c) for c in self._cosines(pairs)]

    def relevance(self, pairs: list[tuple[str, str]]) -> list[float]:
        return self._cosines(pairs)
