"""An index on disk: chunks (llama-index TextNodes), the faiss index, the BM25 index and the manifest.

Layout of ``index_dir``: ``manifest.json``, ``chunks.jsonl``, ``dense.faiss``, ``bm25/`` (and ``dense.ivfdata``, the
inverted lists of an on-disk IVF index: rag/ondisk_index.py). Written to a temporary
sibling folder and swapped into place atomically (rag/index_dir.py), so a killed build never leaves half an index and
never touches the old one; a folder without a ragdoctor index manifest is never replaced. Every load checks the
files against the manifest's sizes and sha256 and the vector count against the chunks: a mismatch says rebuild."""
from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import faiss

from corpora.errors import InputError, warn
from corpora.records import Document
from rag import faiss_index, ondisk_index
from rag.bm25 import BM25Index
from rag.bm25 import is_current as bm25_current
from rag.chunking import chunk_documents, embedding_text, hf_tokenizer, model_token_counts, whitespace_tokenizer
from rag.config import ChunkingConfig, IndexConfig
from rag.index_dir import building, check_index_name, check_index_target, index_lock
from rag.manifest import (
    MANIFEST_VERSION,
    REBUILD,
    IndexMismatch,
    Manifest,
    check_build_settings,
    check_compatible,
    corpus_checksum,
    file_entries,
    is_index_manifest,
    manifest_version,
    read_manifest,
    verify_files,
)


@dataclass
class IndexStore:
    index_dir: Path
    manifest: Manifest
    nodes: list  # llama-index TextNode, position i == faiss id i
    dense: object  # faiss index (CPU or GPU)
    device: str
    bm25: BM25Index | None
    build_seconds: dict[str, float] = field(default_factory=dict)

    def vector_store(self):
        """The faiss index wrapped as llama-index's FaissVectorStore (ids are positions into ``nodes``; equal scores in
        corpus order, as :func:`rag.faiss_index.search` gives them)."""
        from llama_index.vector_stores.faiss import FaissVectorStore  # noqa: PLC0415 - lazy: llama-index takes a second

        return FaissVectorStore(faiss_index=faiss_index.InCorpusOrder(self.dense))

    def label_targets(self) -> set[str]:
        """Every id a relevance label may name: the index's documents and chunks (``doc#0``, read at chunk level)."""
        return {n.metadata["doc_id"] for n in self.nodes} | {n.node_id for n in self.nodes}


def backend_of(embedder) -> str:
    """How ``embedder`` runs (rag/embedding_backends.py): 'torch' for one that does not say."""
    return str(getattr(embedder, "backend", "torch"))


def tokenizer_for(embedder):
    return hf_tokenizer(embedder.tokenizer_dir) if getattr(embedder, "tokenizer_dir", None) else whitespace_tokenizer


def max_input_tokens(embedder) -> int | None:
    """The most tokens the embedder reads of a text (the rest is cut off unseen): its ``max_seq_length``, or that of
    a sentence-transformers folder (sentence_bert_config.json); None when it says none."""
    value = getattr(embedder, "max_seq_length", None)
    if value is None and getattr(embedder, "tokenizer_dir", None):
        try:
            value = json.loads((Path(embedder.tokenizer_dir) / "sentence_bert_config.json").read_text(
                encoding="utf-8")).get("max_seq_length")
        except (OSError, ValueError, AttributeError):
            return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def warn_cut_off(texts: list[str], embedder, chunking: ChunkingConfig, where: Path) -> int:
    """How many chunks' embedding texts (title and chunk) are longer than the embedder reads; warned about once: their
    end is not in their vector, so a question about it cannot find them by meaning."""
    limit = max_input_tokens(embedder)
    if limit is None or not getattr(embedder, "tokenizer_dir", None):
        return 0
    try:
        counts = model_token_counts(str(embedder.tokenizer_dir), texts)
    except Exception:  # noqa: BLE001 - a tokenizer that cannot be read only costs this check, never the build
        return 0
    over = sum(c > limit for c in counts)
    if over:
        warn(f"{where}: {over} of {len(texts)} chunks ({over / len(texts):.0%}) are longer than the {limit} tokens the "
             f"embedder reads (its max_seq_length; the title is embedded with each chunk): their end is not in their "
             f"vector, so dense retrieval cannot find it; lower chunking.chunk_size (now {chunking.chunk_size}) "
             f"and rebuild")
    return over


_queries_cut: set[tuple[str, str]] = set()  # (who, embedder) a question was found cut for (said once a process each)


def warn_query_cut_off(queries: list[str], embedder, who: str = "dense retrieval") -> None:
    """A question longer than the embedder reads is embedded from its start only (the rest cut off unseen, as for
    chunks: :func:`warn_cut_off`): said once a process per embedder and per ``who`` embeds it (dense retrieval, the
    topic rail: each reads only the start), naming the longest question of the batch where it was first seen and the
    limit, never per question. Only questions long enough to be over it are tokenized."""
    name = str(getattr(embedder, "model_id", type(embedder).__name__))
    if (who, name) in _queries_cut or not getattr(embedder, "tokenizer_dir", None):
        return
    limit = max_input_tokens(embedder)
    if limit is None:
        return
    # no tokenizer makes more than two tokens a byte (special tokens aside): a shorter question cannot be cut
    long = [q for q in queries if 2 * len(q.encode("utf-8", "replace")) + 8 > limit]
    if not long:
        return
    try:
        most = max(model_token_counts(str(embedder.tokenizer_dir), long))
    except Exception:  # noqa: BLE001 - a tokenizer that cannot be read only costs this check, never the search
        return
    if most > limit:
        _queries_cut.add((who, name))
        warn(f"a question of {most} tokens is longer than the {limit} tokens the embedder reads (its max_seq_length): "
             f"{who} embeds its start only, the rest is cut off unseen (said once; other long questions are cut the "
             "same way)")


def _write_nodes(path: Path, nodes) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for node in nodes:
            record = {"id": node.id_, "text": node.text, "metadata": node.metadata}
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")


def _read_nodes(path: Path):
    from llama_index.core.schema import TextNode  # noqa: PLC0415 - lazy: see vector_store

    nodes = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            try:
                obj = json.loads(line)
                nodes.append(TextNode(id_=obj["id"], text=obj["text"], metadata=obj["metadata"],
                                      excluded_embed_metadata_keys=["doc_id", "chunk"],
                                      excluded_llm_metadata_keys=["doc_id", "chunk"]))
            except (ValueError, KeyError, TypeError) as exc:
                raise IndexMismatch(f"{path}:{lineno}: unreadable chunk ({type(exc).__name__}); {REBUILD}") from None
    return nodes


def build_index(docs: list[Document], index_dir: str | Path, embedder, *, chunking: ChunkingConfig,
                index_cfg: IndexConfig, with_bm25: bool = True, dense_builder=None,
                checksum: str | None = None) -> IndexStore:
    """Chunk, embed, index and save. Returns the loaded store. ``dense_builder(texts, index_cfg, folder)``, when given,
    embeds and builds the faiss index elsewhere (rag/ray_index.RayDense: Ray Data actors) instead of with
    ``embedder``; ``folder`` is where an on-disk index writes its lists (``index_cfg.on_disk``), else None.
    ``checksum``: the documents' corpus_checksum when the caller has it (computed here otherwise)."""
    index_dir = check_index_target(index_dir)  # before minutes of embedding: a folder we may not replace fails now
    check_index_name(index_dir, on_disk=index_cfg.on_disk)  # ...and one faiss could not open its lists under
    timings: dict[str, float] = {}
    t = time.perf_counter()
    nodes = chunk_documents(docs, chunking, tokenizer_for(embedder))
    if not nodes:
        raise InputError(index_dir, "the corpus produced no chunks")
    timings["chunk"] = time.perf_counter() - t
    texts = [embedding_text(n) for n in nodes]
    warn_cut_off(texts, embedder, chunking, index_dir)
    with building(index_dir) as tmp:
        out = tmp if index_cfg.on_disk else None  # on disk: the inverted lists are written straight into the folder
        t = time.perf_counter()
        if dense_builder is None:
            vectors = embedder.embed(texts)
            timings["embed"] = time.perf_counter() - t
            t = time.perf_counter()
            ids = [n.node_id for n in nodes]
            dense = faiss_index.build(vectors, index_cfg, ids) if out is None else \
                ondisk_index.build(vectors, index_cfg, out, ids=ids)
            del vectors
            timings["faiss"] = time.perf_counter() - t
        else:
            dense = dense_builder(texts, index_cfg, out)
            timings["embed+faiss (ray)"] = time.perf_counter() - t
        dim, n_vectors = int(dense.d), int(dense.ntotal)
        faiss_index.save(dense, tmp / "dense.faiss")
        del dense  # an on-disk index unmaps its lists file before the file is hashed
        bm25 = None
        if with_bm25:
            t = time.perf_counter()
            bm25 = BM25Index.build(texts, k1=index_cfg.bm25_k1, b=index_cfg.bm25_b, language=index_cfg.bm25_language)
            timings["bm25"] = time.perf_counter() - t
            if bm25 is None:
                warn(f"{index_dir}: the corpus has no words BM25 can index: the index is dense only")
        _write_nodes(tmp / "chunks.jsonl", nodes)
        if bm25 is not None:
            bm25.save(tmp / "bm25")
        manifest = Manifest(
            embedder_id=embedder.model_id, embedding_backend=backend_of(embedder), dim=dim,
            normalized=bool(embedder.normalize),
            chunking=chunking, index=index_cfg,
            factory=faiss_index.factory_string(index_cfg, len(nodes), dim),
            corpus_checksum=checksum or corpus_checksum(docs), n_documents=len(docs), n_chunks=len(nodes),
            faiss_version=faiss.__version__, bm25=bm25 is not None,
            built_at=datetime.now(UTC).isoformat(timespec="seconds"),
            n_vectors=n_vectors, files=file_entries(tmp))
        (tmp / "manifest.json").write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    store = load_index(index_dir, embedder, index_cfg=index_cfg)
    store.build_seconds = timings
    return store


BM25_KEYS = {"bm25_k1", "bm25_b", "bm25_language"}  # baked into the saved BM25 index (rag/bm25.py): rebuilt alone


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)  # the same bytes under a second name: the old folder's removal leaves them to the new one
    except OSError:
        shutil.copy2(src, dst)


def rebuild_bm25(index_dir: str | Path, embedder, *, index_cfg: IndexConfig) -> IndexStore:
    """The index with only its BM25 part rebuilt at ``index_cfg``'s (k1, b): chunks and vectors are kept (hard links,
    or copies across filesystems), so a change of BM25 settings costs seconds instead of a re-embedding. Written and
    swapped in like a build (rag/index_dir.py): a killed rebuild leaves the old index intact."""
    index_dir = Path(index_dir)
    t = time.perf_counter()
    old = _verified_manifest(index_dir, embedder)  # every file is checked before any is reused
    nodes = _read_nodes(index_dir / "chunks.jsonl")
    with building(index_dir) as tmp:
        for name in ("chunks.jsonl", "dense.faiss", ondisk_index.IVFDATA):
            if (index_dir / name).is_file():
                _link_or_copy(index_dir / name, tmp / name)
        bm25 = BM25Index.build([embedding_text(n) for n in nodes], k1=index_cfg.bm25_k1, b=index_cfg.bm25_b,
                               language=index_cfg.bm25_language)
        if bm25 is not None:
            bm25.save(tmp / "bm25")
        index = old.index.model_copy(update=index_cfg.model_dump(include=BM25_KEYS))
        files = {k: v for k, v in old.files.items() if not k.startswith("bm25/")}  # the same bytes: not hashed again
        if bm25 is not None:
            files.update({f"bm25/{k}": v for k, v in file_entries(tmp / "bm25").items()})
        manifest = old.model_copy(update={"index": index, "bm25": bm25 is not None,
                                          "files": dict(sorted(files.items())),
                                          "built_at": datetime.now(UTC).isoformat(timespec="seconds")})
        (tmp / "manifest.json").write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    store = load_index(index_dir, embedder, index_cfg=index_cfg)
    store.build_seconds = {"bm25": time.perf_counter() - t}
    return store


def _verified_manifest(index_dir: Path, embedder) -> Manifest:
    """The index's manifest, checked against ``embedder`` and against the files on disk (sizes and sha256)."""
    manifest = read_manifest(index_dir)
    check_compatible(manifest, index_dir, embedder_id=embedder.model_id, dim=embedder.dim,
                     normalized=embedder.normalize, backend=backend_of(embedder))
    verify_files(manifest, index_dir)
    return manifest


def load_index(index_dir: str | Path, embedder, *, index_cfg: IndexConfig | None = None) -> IndexStore:
    """Load and check the manifest against ``embedder`` and the files on disk; move the dense index to the GPU when
    there is one."""
    index_dir = Path(index_dir)
    manifest = _verified_manifest(index_dir, embedder)
    on_disk = manifest.index.on_disk  # how the files were written, whatever the caller's settings say
    cfg = (index_cfg or manifest.index).model_copy(update={"on_disk": on_disk})
    try:
        cpu_index = faiss_index.load(index_dir / "dense.faiss", on_disk=on_disk)
    except RuntimeError as exc:
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:200]
        raise IndexMismatch(f"index at {index_dir}: dense.faiss is unreadable ({why}); {REBUILD}") from None
    nodes = _read_nodes(index_dir / "chunks.jsonl")
    counts = {"vectors in dense.faiss": int(cpu_index.ntotal), "manifest n_vectors": manifest.n_vectors,
              "manifest n_chunks": manifest.n_chunks, "chunks in chunks.jsonl": len(nodes)}
    if len(set(counts.values())) != 1 or cpu_index.d != manifest.dim:
        said = ", ".join(f"{k} {v}" for k, v in counts.items())
        raise IndexMismatch(f"index at {index_dir} is inconsistent ({said}; dimension {cpu_index.d} vs "
                            f"{manifest.dim}); {REBUILD}")
    dense, device = faiss_index.to_device(cpu_index, cfg, log=logging.getLogger("ragdoctor").warning)
    faiss_index.tune(dense, cfg)
    bm25 = BM25Index.load(index_dir / "bm25", len(nodes)) if manifest.bm25 and (index_dir / "bm25").exists() else None
    return IndexStore(index_dir, manifest, nodes, dense, device, bm25)


def ensure_index(docs: list[Document], index_dir: str | Path, embedder, *, chunking: ChunkingConfig,
                 index_cfg: IndexConfig, rebuild: bool = False, strict_embedder: bool = False,
                 dense_builder=None) -> tuple[IndexStore, bool]:
    """Load the index if it is current for these documents and settings, else (re)build it. Returns (store, built).

    With ``strict_embedder`` an index built by another embedder is an error (IndexMismatch) instead of a rebuild:
    querying commands use it, so a wrong ``--embedder`` never silently replaces a user's index. A current index is
    loaded without waiting for anything; a build holds the index's lock (rag.index_dir.index_lock), and what to do is
    decided again under it: a process that waited for another's build then finds the index current."""
    index_dir = Path(index_dir)
    checksum = corpus_checksum(docs)  # once: every text hashed, read by both plans and the manifest
    plan = "build" if rebuild else _plan(docs, checksum, index_dir, embedder, chunking, index_cfg, strict_embedder)[0]
    if plan == "load":
        return load_index(index_dir, embedder, index_cfg=index_cfg), False
    check_index_target(index_dir)  # a folder that may not hold an index is refused before its lock is taken
    with index_lock(index_dir):
        plan, why = ("build", None) if rebuild else _plan(docs, checksum, index_dir, embedder, chunking, index_cfg,
                                                          strict_embedder)
        if plan == "load":
            return load_index(index_dir, embedder, index_cfg=index_cfg), False
        if plan == "bm25":
            return rebuild_bm25(index_dir, embedder, index_cfg=index_cfg), True
        if why:
            warn(why)
        return build_index(docs, index_dir, embedder, chunking=chunking, index_cfg=index_cfg,
                           dense_builder=dense_builder, checksum=checksum), True


def _plan(docs: list[Document], checksum: str, index_dir: Path, embedder, chunking: ChunkingConfig,
          index_cfg: IndexConfig, strict_embedder: bool) -> tuple[str, str | None]:
    """What the saved index needs: "load" (current), "bm25" (only BM25's parameters changed) or "build", with the
    warning a rebuild of an existing index says (None: there is none, or it is an older ragdoctor's)."""
    if not (index_dir / "manifest.json").exists():
        return "build", None
    if is_index_manifest(index_dir) and manifest_version(index_dir) != MANIFEST_VERSION:  # an older ragdoctor's
        return "build", None
    manifest = read_manifest(index_dir)
    same_embedder = (manifest.embedder_id, manifest.embedding_backend) == (embedder.model_id, backend_of(embedder))
    if strict_embedder and not same_embedder:
        check_compatible(manifest, index_dir, embedder_id=embedder.model_id, dim=embedder.dim,
                         normalized=embedder.normalize, backend=backend_of(embedder))
    search_time = {"nprobe", "ef_search", "use_gpu", "refine_k_factor", "on_disk"}
    same_dense = manifest.index.model_dump(exclude=search_time | BM25_KEYS) == \
        index_cfg.model_dump(exclude=search_time | BM25_KEYS) \
        and manifest.factory == faiss_index.factory_string(index_cfg, manifest.n_chunks, manifest.dim) \
        and (manifest.index.on_disk or not index_cfg.on_disk)  # on-disk lists serve any search; asked for, a
    # memory index is rebuilt on disk; never the reverse (a corpus put on disk may not fit in memory)
    stale = check_build_settings(manifest, chunking=chunking, checksum=checksum)
    if same_embedder and same_dense and not stale:
        # and its text split as a new build would split it: else split before CJK bigrams, before languages (read
        # as English whatever the texts) or before Thai bigrams (rag/bm25.is_current)
        same_bm25 = manifest.index.model_dump(include=BM25_KEYS) == index_cfg.model_dump(include=BM25_KEYS) \
            and (not manifest.bm25 or bm25_current(index_dir / "bm25", index_cfg.bm25_language))
        return ("load" if same_bm25 else "bm25"), None
    why = stale + ([] if same_embedder else ["another embedder"]) + ([] if same_dense else ["other index settings"])
    corpus_changed = manifest.corpus_checksum != checksum
    return "build", f"{index_dir}: the index is rebuilt ({'; '.join(why)})" + (
        f": it held {manifest.n_documents} documents, now {len(docs)} (pass the --corpus it was built from to use it "
        f"as it is)" if corpus_changed else "")
