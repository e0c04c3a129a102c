"""Assemble a ready pipeline from a config: documents, embedder, index (built if stale), generator.
The bundled model server, when used, is started on demand and stopped when the session closes."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from corpora.bundled import bundled_documents, bundled_questions
from corpora.errors import warn
from corpora.loaders import load_corpus, load_question_set
from corpora.records import Document, Question
from rag.config import PipelineConfig
from rag.embeddings import make_embedder
from rag.pipeline import Pipeline
from rag.store import IndexStore, ensure_index


def load_documents(cfg: PipelineConfig) -> list[Document]:
    """The corpus; a bad record is reported and skipped (corpora.jsonl.read_records)."""
    return bundled_documents() if cfg.corpus == "bundled" else load_corpus(cfg.corpus)


def question_set(cfg: PipelineConfig, errors: list | None = None) -> list[Question]:
    """The question set; a bad record goes to ``errors`` (or is reported) and is skipped. A file none of whose lines
    is a JSON object (plain text, CSV, a JSON array) is refused saying what a question set is; texts asked under two
    ids are warned about."""
    if cfg.questions == "bundled":
        return bundled_questions()
    questions = load_question_set(cfg.questions, errors)
    warn_repeated_texts(cfg.questions, questions)
    return questions


def warn_repeated_texts(source: str, questions: list[Question]) -> None:
    """Two ids asking one question (white space and case aside) weigh it twice in every mean: say so, once."""
    first: dict[str, str] = {}
    again = []
    for q in questions:
        key = " ".join(q.question.split()).casefold()
        if key in first:
            again.append(f"{q.id!r} repeats {first[key]!r}")
        else:
            first[key] = q.id
    if again:
        shown = ", ".join(again[:3]) + (", ..." if len(again) > 3 else "")
        warn(f"{source}: {len(again)} question(s) ask again what another id asks ({shown}): each is answered, and "
             "counted in every mean, once per id")


def embedder_for(cfg: PipelineConfig):
    e = cfg.embedding
    return make_embedder(e.model, batch_size=e.batch_size, device=e.device, backend=e.backend)


def open_index(cfg: PipelineConfig, embedder=None, *, rebuild: bool = False, strict_embedder: bool = False,
               dense_builder=None) -> tuple[IndexStore, bool]:
    """The index for ``cfg``, built when missing or stale (changed corpus, chunking or index kind); a build embeds
    with ``dense_builder`` when given (rag/ray_index.RayDense)."""
    embedder = embedder or embedder_for(cfg)
    return ensure_index(load_documents(cfg), cfg.index_dir, embedder, chunking=cfg.chunking, index_cfg=cfg.index,
                        rebuild=rebuild, strict_embedder=strict_embedder, dense_builder=dense_builder)


@contextmanager
def open_generator(cfg: PipelineConfig, llm=None) -> Iterator[object]:
    """``llm`` if given; else an OpenAI-compatible client to ``generation.base_url``; else the bundled model."""
    if llm is not None:
        yield llm
        return
    from rag.server import llm_for  # noqa: PLC0415 - lazy: the bundled model server, only without an llm or URL

    g = cfg.generation
    # n_ctx reaches the server: the context budget is checked against it (PipelineConfig._budget_fits), so a server
    # holding less per slot would cut the prompts the config accepted
    client, server = llm_for(g.base_url, g.model, n_ctx=g.n_ctx, parallel=g.concurrency, timeout=g.timeout,
                             max_retries=g.max_retries)
    try:
        yield client
    finally:
        if server is not None:
            server.stop()


@contextmanager
def open_pipeline(cfg: PipelineConfig, *, llm=None, embedder=None, rebuild: bool = False,
                  fact_check=None) -> Iterator[Pipeline]:
    """With ``cfg.guardrails.enabled`` the pipeline comes wrapped in a ``GuardedPipeline`` (same ``answer``); its
    output rail needs ``fact_check`` (built by ``eval.guard_adapter.make_fact_check``: rag/ does not import eval/)."""
    embedder = embedder or embedder_for(cfg)
    store, _ = open_index(cfg, embedder, rebuild=rebuild, strict_embedder=True)
    with open_generator(cfg, llm) as client:
        pipe = Pipeline(cfg, store, embedder, client)
        if not cfg.guardrails.enabled:
            yield pipe
            return
        from rag.guardrails import GuardedPipeline  # noqa: PLC0415 - lazy: nemoguardrails, only with the rails on

        with GuardedPipeline(pipe, cfg.guardrails, fact_check=fact_check) as guarded:
            yield guarded
