"""The pipeline: question -> retrieve -> (rerank) -> grounded prompt -> generate -> Trace (with per-stage latency)."""
from __future__ import annotations

import threading
import time

from corpora.records import Candidate, Chunk, Question, Trace
from rag.config import PipelineConfig
from rag.context_budget import leading_sentences, pack
from rag.llm import LLMError, LLMResponse
from rag.prompt import RETRY_NUDGE, build_messages, cited_ids, context_line, is_refusal, strip_citations
from rag.reranker import RerankStage
from rag.retrievers import make_retriever
from rag.store import IndexStore, tokenizer_for


class Pipeline:
    """Holds the loaded index, embedder, retriever and generator; ``answer`` never raises on model failure."""

    def __init__(self, cfg: PipelineConfig, store: IndexStore, embedder, llm):
        self.cfg = cfg
        self.store = store
        self.embedder = embedder
        self.llm = llm
        self.retriever = make_retriever(store, embedder, cfg.retrieval)
        self.rerank = RerankStage(cfg.retrieval) if cfg.retrieval.rerank else None
        self.config_hash = cfg.config_hash()
        self._retrieving = threading.Lock()  # retrieval runs one at a time; generation may run concurrently
        self._rerank_id: str | None = None  # the reranker's model_id, read once (reuses)

    def reuses(self, trace: Trace) -> bool:
        """Whether a stored trace of this configuration was answered as this pipeline would answer now: the config
        hash leaves out what the machine chooses, the reranker's precision (bf16 and int8 rank slightly differently;
        ``auto`` picks per CPU, $RAGDOCTOR_RERANK_PRECISION overrides), so a trace reranked in another one is not
        reused; nor one reranked by a folder of the user's whose files have changed since (``model_id``: the config
        names the folder by its path)."""
        done = trace.metadata.get("rerank") or {}
        if self.rerank is None:
            return True
        if done.get("precision") not in (None, self.rerank.reranker.will_run_in):
            return False
        # the bundled reranker (named by its name), or a trace before model ids: nothing more to tell
        return done.get("model_id") is None or done["model_id"] == self._rerank_model_id()

    def _rerank_model_id(self) -> str:
        """The reranker's model_id, read once per pipeline (for a folder of the user's: a walk of its files), not per
        stored or answered trace."""
        if self._rerank_id is None:
            self._rerank_id = self.rerank.reranker.model_id  # type: ignore[union-attr]
        return self._rerank_id

    def retrieve(self, question: str, k: int | None = None) -> list[Chunk]:
        """Ranked chunks: ``select`` picks those given to the generator (the first ``top_k``, or the ones packed into
        ``context_tokens``), the rest (up to ``candidate_k``) are candidates."""
        return self._ranked(question, k)[0]

    def _ranked(self, question: str, k: int | None = None) -> tuple[list[Chunk], float | None]:
        """The ranked chunks and the rerank stage's milliseconds (None without one): the first stage's best
        ``rerank_depth`` chunks reordered by the cross-encoder, the rest in first-stage order."""
        r = self.cfg.retrieval
        k = k or max(r.top_k, r.candidate_k, r.rerank_depth if self.rerank else 0)
        rerank_ms = None
        with self._retrieving:
            hits = self.retriever.search(question, k)
            if self.rerank is not None:
                hits = self.rerank.apply(question, hits, lambda h: self.store.nodes[h.position].text)
                rerank_ms = self.rerank.last_ms
        out = []
        for rank, h in enumerate(hits, start=1):
            node = self.store.nodes[h.position]
            out.append(Chunk(chunk_id=node.id_, doc_id=node.metadata["doc_id"], rank=rank, score=h.score,
                                      text=node.text, title=node.metadata.get("title", ""), signals=h.signals))
        return out, rerank_ms

    def select(self, ranked: list[Chunk]) -> tuple[list[Chunk], list[Chunk], dict | None]:
        """The chunks given to the generator and the ones left out (both in rank order): the first ``top_k``, or,
        with ``context_tokens`` set, the ones packed into that budget (rag/context_budget.py: whole chunks in rank
        order, the first that does not fit cut at a sentence boundary and flagged ``cut``), with what the packing
        counted (budget, tokens used, the tokenizer, the cut chunk's id) for the trace."""
        budget = self.cfg.retrieval.context_tokens
        if budget is None:
            top_k = self.cfg.retrieval.top_k
            return ranked[:top_k], ranked[top_k:], None
        tokenize = tokenizer_for(self.embedder)

        def tokens(chunk_id: str, text: str) -> int:
            return len(tokenize(context_line(chunk_id, text)))

        def shorten(c: Chunk, room: int) -> tuple[Chunk, int] | None:
            head = leading_sentences(c.text, room, lambda text: tokens(c.chunk_id, text))
            if head is None:
                return None
            return c.model_copy(update={"text": head, "flags": [*c.flags, "cut"]}), tokens(c.chunk_id, head)

        packing = pack(ranked, budget, lambda c: tokens(c.chunk_id, c.text), shorten)
        counter = getattr(self.embedder, "model_id", "unknown") if getattr(self.embedder, "tokenizer_dir", None) \
            else "whitespace words"
        info = {"budget": budget, "tokens": packing.tokens, "packed": len(packing.packed), "tokenizer": counter,
                "cut": packing.cut.chunk_id if packing.cut is not None else None}
        return packing.packed, packing.left_out, info

    def generate(self, question: str, contexts: list[tuple[str, str]]) -> str:
        """Answer ``question`` from (chunk id, text) pairs with the grounded prompt (probes call this directly)."""
        return self.generate_with_usage(question, contexts)[0]

    def generate_with_usage(self, question: str, contexts: list[tuple[str, str]]) -> tuple[str, dict[str, float]]:
        """The answer and what the generator reported, summed over its calls: tokens read, tokens its KV cache held
        (the fixed system prompt is the same prefix every time), tokens written, milliseconds reading prompts."""
        g = self.cfg.generation
        messages = build_messages(question, contexts)
        reply = self.llm.chat(messages, temperature=g.temperature, max_tokens=g.max_tokens, seed=g.seed)
        usage = reply.usage() if isinstance(reply, LLMResponse) else {}
        text = reply.text.strip()
        if text and not strip_citations(text, {cid for cid, _ in contexts}):  # a bare citation: ask once more
            retry = [*messages, {"role": "assistant", "content": text}, {"role": "user", "content": RETRY_NUDGE}]
            try:
                again = self.llm.chat(retry, temperature=g.temperature, max_tokens=g.max_tokens, seed=g.seed)
            except LLMError:  # the first reply stands (its answer metrics are unmeasured: no words to check)
                return text, usage
            text = again.text.strip()
            more = again.usage() if isinstance(again, LLMResponse) else {}
            usage = {k: usage[k] + more[k] for k in usage} if usage.keys() == more.keys() else {}
        return text, usage

    def chunks_of(self, doc_ids: list[str]) -> list[Chunk]:
        """Every chunk of the given documents from the index, in document and chunk order."""
        wanted = set(doc_ids)
        nodes = [n for n in self.store.nodes if n.metadata["doc_id"] in wanted]
        return [Chunk(chunk_id=n.id_, doc_id=n.metadata["doc_id"], rank=i, text=n.text,
                      title=n.metadata.get("title", "")) for i, n in enumerate(nodes, start=1)]

    def answer(self, question: str, sample: Question | None = None) -> Trace:
        """The trace of ``sample`` (its labels copied onto the trace), or of a bare ``question``."""
        sample = sample or Question(id="adhoc", question=question)
        trace = Trace.of(sample, question=question, contexts=[], config_hash=self.config_hash,
                         generator=getattr(self.llm, "model_id", "unknown"), embedder=self.embedder.model_id)
        t0 = time.perf_counter()
        ranked, rerank_ms = self._ranked(question)
        contexts, rest, budget = self.select(ranked)
        trace.contexts = contexts
        trace.candidates = [Candidate(chunk_id=c.chunk_id, doc_id=c.doc_id, rank=c.rank, score=c.score,
                                      signals=c.signals) for c in rest]
        if budget is not None:
            trace.metadata["context_budget"] = budget
        t1 = time.perf_counter()
        trace.latency_ms["retrieve"] = (t1 - t0) * 1000 - (rerank_ms or 0.0)  # the first stage (and the cut)
        if rerank_ms is not None:
            trace.latency_ms["rerank"] = rerank_ms
            model = self.rerank.reranker  # type: ignore[union-attr]
            trace.metadata["rerank"] = {"model": model.name, "precision": model.runs_in}  # bf16 and int8 differ
            if (model_id := self._rerank_model_id()) != model.name:  # a folder of the user's: which files reranked it
                trace.metadata["rerank"]["model_id"] = model_id
        pairs = [(c.chunk_id, c.text) for c in contexts]
        trace.prompt = build_messages(question, pairs)
        try:
            trace.answer, usage = self.generate_with_usage(question, pairs)
            trace.usage = {k: v for k, v in usage.items() if k != "prompt_ms"}
            if "prompt_ms" in usage:
                trace.latency_ms["read_prompt"] = usage["prompt_ms"]
        except Exception as exc:  # a model failure becomes data on the trace, never a crash of the run
            first = str(exc).splitlines()[0] if str(exc) else ""
            trace.outcome, trace.error = "error", f"{type(exc).__name__}: {first}"
        t2 = time.perf_counter()
        trace.latency_ms["generate"] = (t2 - t1) * 1000
        trace.latency_ms["total"] = (t2 - t0) * 1000
        if trace.outcome != "error" and not trace.answer:
            trace.outcome, trace.error = "error", "the generator returned an empty answer"
        if trace.outcome != "error":
            trace.outcome = "refused" if is_refusal(trace.answer) else "answered"
            trace.cited_chunk_ids = cited_ids(trace.answer, {c.chunk_id for c in contexts})
        return trace
