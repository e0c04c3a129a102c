"""Off-topic score: cosine similarity of the question to its nearest chunk in the pipeline's own dense index (and to an
optional topic description), with the pipeline's embedder (the bundled MiniLM by default; never a download)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from corpora.scripts import MAX_FOREIGN, main_script, non_latin_share
from rag import faiss_index
from rag.models import MINILM_ID
from rag.store import warn_query_cut_off


@dataclass
class TopicScore:
    score: float
    nearest_chunk: str | None
    chunk_score: float
    topic_score: float | None

    def as_dict(self) -> dict:
        return {"score": round(self.score, 4), "nearest_chunk": self.nearest_chunk,
                "chunk_score": round(self.chunk_score, 4),
                "topic_score": None if self.topic_score is None else round(self.topic_score, 4)}


class TopicScorer:
    """``score(question)``: the higher of (nearest-chunk cosine, topic-description cosine). The question's embedding
    is cached by the embedder, so the retrieval that follows does not embed it again."""

    def __init__(self, store, embedder, topic: str = ""):
        self.store = store
        self.embedder = embedder
        self.topic = topic.strip()
        self._topic_vec: np.ndarray | None = None

    def unreadable(self, question: str) -> str | None:
        """Why the embedder cannot score ``question`` (None when it can): the bundled MiniLM reads Latin-script text,
        and gives a question mostly in another script a similarity that means nothing (an on-topic Japanese question
        scores under an off-topic English one). Another embedder is taken at its word."""
        if not str(getattr(self.embedder, "model_id", "")).startswith(MINILM_ID):
            return None
        share = non_latin_share(question)
        if share <= MAX_FOREIGN:
            return None
        return (f"the embedder (MiniLM) reads Latin-script text; {share:.0%} of the question is "
                f"{main_script(question)}: its similarity to the corpus cannot be scored")

    def score(self, question: str) -> TopicScore:
        """A question longer than the embedder reads is scored on its start only: said once per embedder, as dense
        retrieval says it (an off-topic tail goes unseen)."""
        warn_query_cut_off([question], self.embedder, who="the topic rail")
        vec = self.embedder.embed([question])
        scores, positions = faiss_index.search(self.store.dense, vec, 1)
        pos, chunk_score = int(positions[0][0]), float(scores[0][0])
        nearest = self.store.nodes[pos].id_ if pos >= 0 else None
        if pos < 0:
            chunk_score = -1.0
        topic_score = None
        if self.topic:
            if self._topic_vec is None:
                self._topic_vec = self.embedder.embed([self.topic])[0]
            topic_score = float(np.dot(vec[0], self._topic_vec))
        best = max(chunk_score, topic_score if topic_score is not None else -1.0)
        return TopicScore(best, nearest, chunk_score, topic_score)
