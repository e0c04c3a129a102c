#!/usr/bin/env python
"""Retrieval benchmark: quality of BM25 / dense / hybrid retrieval, faiss index kinds (build time, latency,
throughput, size, recall against flat) and embedding / BM25 build cost, on BEIR-layout datasets.

    python bench/retrieval.py [--datasets scifact,cranfield] [--max-queries N] [--max-docs N]
                              [--out bench/results/retrieval.json] [--embedder minilm|fake|DIR]
                              [--embedding-backend torch|torch-bf16] [--data-dir DIR]

Prints a set of tables per dataset and writes every number, plus machine info, to the JSON file.
Not a timed test: numbers depend on the machine. See bench/README.md for what each column means.
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import os
import platform
import sqlite3
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import faiss
import numpy as np
from pydantic import ValidationError
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python bench/retrieval.py` from anywhere
    sys.path.insert(0, str(ROOT))

from rag.offline import set_offline_env  # noqa: E402

set_offline_env()

from corpora.digest import folder_digest  # noqa: E402
from corpora.errors import InputError  # noqa: E402
from corpora.loaders import load_beir  # noqa: E402
from eval.retrieval_metrics import mean_metrics, retrieval_metrics  # noqa: E402
from rag import faiss_index, models  # noqa: E402
from rag.bm25 import BM25Index  # noqa: E402
from rag.chunking import embedding_text  # noqa: E402
from rag.config import ChunkingConfig, IndexConfig, RetrievalConfig  # noqa: E402
from rag.embeddings import make_embedder  # noqa: E402
from rag.fusion import aggregate_documents  # noqa: E402
from rag.reranker import CrossEncoderReranker, rerank_order  # noqa: E402
from rag.retrievers import make_retriever  # noqa: E402
from rag.store import build_index  # noqa: E402
from ragdoctor.table import fmt, render  # noqa: E402

DATASETS = {"scifact": "train", "cranfield": "test"}  # name -> qrels split
MODES = ("bm25", "dense", "hybrid")
FUSION_WEIGHTS = (0.3, 0.5, 0.7)  # dense share in the min-max / z-score fusions: a coarse grid, reported whole
FUSION_DEFAULT_W = 0.5
RERANK_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)  # reranker share of the interpolated score (1: pure rerank)
KINDS = ("flat", "ivf", "hnsw", "ivfpq", "sq8")
CHUNK_K, DOC_K = 200, 100  # chunks retrieved per query, documents scored (first occurrence of each doc id)
LATENCY_QUERIES = 200  # single-query searches timed per index kind
THROUGHPUT_SAMPLE = 256  # passages embedded without the cache to measure embedding speed
CHUNKING = ChunkingConfig(chunk_size=256, chunk_overlap=32)
_T0 = time.perf_counter()
LOAD_START = list(os.getloadavg())


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def load_dataset(folder: Path, split: str, max_docs: int | None, max_queries: int | None):
    """Docs, labelled queries and dropped (empty) doc ids; with --max-docs, docs judged for kept queries go first."""
    dropped: list[str] = []
    docs, samples = load_beir(folder, split, skipped=dropped)
    samples = samples[:max_queries] if max_queries else samples
    if max_docs and len(docs) > max_docs:
        judged = {d for s in samples for d in s.metadata["qrels"]}
        docs = sorted(docs, key=lambda d: d.id not in judged)[:max_docs]  # stable: corpus order otherwise
    return docs, samples, dropped


def doc_ranking(nodes, positions, k: int = DOC_K) -> list[str]:
    """Chunk positions (best first) -> document ids, first occurrence wins, at most k."""
    ids: dict[str, None] = {}
    for p in positions:
        if p >= 0:
            ids.setdefault(nodes[int(p)].metadata["doc_id"])
            if len(ids) == k:
                break
    return list(ids)


def quality(qrels, rankings) -> dict[str, float | None]:
    at10 = mean_metrics(retrieval_metrics(qrels, rankings, ks=(10,)))  # MRR is cut at max(ks): call twice
    at100 = mean_metrics(retrieval_metrics(qrels, rankings, ks=(DOC_K,)))
    return {"ndcg@10": at10.get("ndcg@10"), f"recall@{DOC_K}": at100.get(f"recall@{DOC_K}"), "mrr@10": at10.get("mrr@10")}


def eval_retrievers(store, embedder, samples, qrels, skip: frozenset[str] = frozenset()
                    ) -> tuple[dict[str, dict], dict[str, list]]:
    """The three modes (minus ``skip``), then hybrid with the other fusions over a coarse dense-weight grid; also every
    variant's hits."""
    questions = [s.question for s in samples]
    out, all_hits = {}, {}
    variants: list[tuple[str, dict[str, object]]] = [(m, {"mode": m}) for m in MODES if m not in skip]
    variants += [(f"hybrid {f} w={w}", {"mode": "hybrid", "fusion": f, "dense_weight": w})
                 for f in ("minmax", "zscore") for w in FUSION_WEIGHTS]
    for name, fields in variants:
        cfg = RetrievalConfig(top_k=CHUNK_K, candidate_k=CHUNK_K, **fields)
        retriever = make_retriever(store, embedder, cfg, cfg.mode)
        t = time.perf_counter()
        hits = retriever.search_batch(questions, CHUNK_K)
        dt = max(time.perf_counter() - t, 1e-9)
        rankings = {s.id: doc_ranking(store.nodes, [h.position for h in row]) for s, row in zip(samples, hits)}
        out[name] = {**quality(qrels, rankings), "retriever": retriever.name, "config": fields, "search_s": dt,
                     "queries_per_s": len(questions) / dt}
        all_hits[name] = hits
        log(f"  {name}: nDCG@10 {fmt(out[name]['ndcg@10'])}")
    return out, all_hits


def eval_aggregation(store, samples, qrels, all_hits: dict[str, list]) -> dict[str, dict]:
    """Document ranking from chunk hits: a document's best chunk (max, what every other row uses) or the sum of its
    best two / three chunk scores, for the RRF and min-max hybrids."""
    out = {}
    for first in ("hybrid", f"hybrid minmax w={FUSION_DEFAULT_W}"):
        for how in ("max", "sum2", "sum3"):
            rankings = {}
            for s, row in zip(samples, all_hits[first]):
                docs = aggregate_documents([(store.nodes[h.position].metadata["doc_id"], h.score) for h in row], how)
                rankings[s.id] = [d for d, _ in docs[:DOC_K]]
            out[f"{first} doc={how}"] = quality(qrels, rankings)
            log(f"  {first} doc={how}: nDCG@10 {fmt(out[f'{first} doc={how}']['ndcg@10'])}")
    return out


def eval_bm25_settings(store, embedder, samples, qrels, settings: list[tuple[float, float]]) -> dict[str, dict]:
    """The BM25 and hybrid rows again with BM25 rebuilt at each (k1, b) of ``--bm25`` (dense rows are unchanged and
    left out); the store's own BM25 (the index defaults) is put back afterwards."""
    texts = [embedding_text(n) for n in store.nodes]
    default, out = store.bm25, {}
    try:
        for k1, b in settings:
            store.bm25 = BM25Index.build(texts, k1=k1, b=b)
            log(f"  BM25 k1={k1} b={b}")
            rows, _ = eval_retrievers(store, embedder, samples, qrels, skip=frozenset({"dense"}))  # BM25 plays no part
            out.update({f"{name} [k1={k1} b={b}]": {**row, "bm25_k1": k1, "bm25_b": b} for name, row in rows.items()})
    finally:
        store.bm25 = default
    return out


class RerankCache:
    """Reranker logits on disk, keyed by (model and its files' digest, the precision it runs in, max length, passage,
    question): a rerun reads them back; bf16 and int8 logits, or a folder retrained in place, never mix."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(path))
        self.conn.execute("CREATE TABLE IF NOT EXISTS r (key TEXT PRIMARY KEY, logit REAL)")
        self._idents: dict[int, tuple] = {}  # per reranker object: its ident, walked once per bench run

    @staticmethod
    def ident(reranker) -> list:
        """What the logits depend on beside the text: the model and its files, its precision, the tokens it reads (a
        folder walk: once per call of ``scores``, not per passage)."""
        return [reranker.model_id, folder_digest(reranker.path), reranker.will_run_in, reranker.max_length]

    @classmethod
    def key(cls, reranker, passage: str, question: str, ident: list | None = None) -> str:
        ident = cls.ident(reranker) if ident is None else ident
        return hashlib.sha256(json.dumps([*ident, passage, question]).encode()).hexdigest()

    def scores(self, reranker, question: str, passages: list[str]) -> tuple[list[float], float | None]:
        """Logits of the passages, and the seconds the model took when none was cached (else None)."""
        held = self._idents.get(id(reranker))
        if held is None:  # the reranker is held beside its ident: its id is never reused meanwhile
            held = self._idents[id(reranker)] = (reranker, self.ident(reranker))
        keys = [self.key(reranker, p, question, held[1]) for p in passages]
        marks = ",".join("?" * len(keys))
        known = dict(self.conn.execute(f"SELECT key, logit FROM r WHERE key IN ({marks})", keys).fetchall())
        missing = [i for i, k in enumerate(keys) if k not in known]
        took = None
        if missing:
            t = time.perf_counter()
            logits = reranker.score(question, [passages[i] for i in missing])
            took = time.perf_counter() - t if len(missing) == len(keys) else None
            rows = [(keys[i], float(v)) for i, v in zip(missing, logits)]
            self.conn.executemany("INSERT OR REPLACE INTO r VALUES (?, ?)", rows)
            self.conn.commit()
            known.update(rows)
        return [known[k] for k in keys], took


def eval_rerank(store, samples, qrels, all_hits: dict[str, list], args) -> dict:
    """The rerank stage on each first stage of ``--rerank-first``: the best ``--rerank-depth`` chunks scored by the
    cross-encoder (rag/reranker.py), ordered by rag.reranker.rerank_order at each weight of the grid (1: pure rerank),
    the chunks below in first-stage order. Model seconds per query are kept where no logit came from the cache."""
    reranker = CrossEncoderReranker(args.reranker, max_length=args.rerank_max_length)
    reranker.score("warm-up", ["the model loads before any query is timed"])
    cache = RerankCache(args.rerank_cache)
    depth = args.rerank_depth
    rows, seconds = {}, []
    logits: dict[str, list[list[float]]] = {}
    for first in args.rerank_first:
        t0 = time.perf_counter()
        logits[first] = []
        for i, (s, row) in enumerate(zip(samples, all_hits[first])):
            scores, took = cache.scores(reranker, s.question, [store.nodes[h.position].text for h in row[:depth]])
            logits[first].append(scores)
            if took is not None:
                seconds.append(took)
            if (i + 1) % 100 == 0:
                log(f"    rerank {first}: {i + 1}/{len(samples)} queries ({time.perf_counter() - t0:.0f}s)")
        for w in RERANK_WEIGHTS:
            rankings = {}
            for s, row, lg in zip(samples, all_hits[first], logits[first]):
                head = row[:depth]
                order, _ = rerank_order([h.score for h in head], lg, w)
                rankings[s.id] = doc_ranking(store.nodes, [head[j].position for j in order] +
                                             [h.position for h in row[depth:]])
            name = f"{first} +rerank@{depth} w={w}"
            rows[name] = {**quality(qrels, rankings), "first_stage": first, "depth": depth, "weight": w}
            log(f"  {name}: nDCG@10 {fmt(rows[name]['ndcg@10'])}")
    pairs_s = [depth / t for t in seconds if t > 0]
    latency = {"model_ms_p50": float(np.percentile(seconds, 50)) * 1e3 if seconds else None,
               "model_ms_p95": float(np.percentile(seconds, 95)) * 1e3 if seconds else None,
               "pairs_per_s_p50": float(np.percentile(pairs_s, 50)) if pairs_s else None,
               "queries_timed": len(seconds), "int8_ffn": reranker.quantized, "max_length": reranker.max_length,
               "model": str(reranker.path.relative_to(ROOT)) if reranker.path.is_relative_to(ROOT) else str(reranker.path)}
    return {"rows": rows, "latency": latency}


def time_single(search_one, queries: np.ndarray) -> dict[str, float]:
    search_one(queries[0])  # warm-up
    lat = []
    for q in queries:
        t = time.perf_counter()
        search_one(q)
        lat.append(time.perf_counter() - t)
    return {"p50_ms": float(np.percentile(lat, 50)) * 1e3, "p99_ms": float(np.percentile(lat, 99)) * 1e3,
            "latency_queries": len(lat)}


def time_batch(search_all, queries: np.ndarray):
    t = time.perf_counter()
    pos = search_all(queries)
    return pos, {"batch_qps": len(queries) / max(time.perf_counter() - t, 1e-9)}


def search_params(cfg: IndexConfig) -> str:
    nprobe = cfg.nprobe if cfg.nprobe is not None else f"{faiss_index.default_nprobe(cfg.nlist)} (default)"
    return {"ivf": f"nprobe={nprobe}", "ivfpq": f"nprobe={nprobe}", "hnsw": f"efSearch={cfg.ef_search}"}.get(cfg.kind, "-")


def bench_faiss_kind(kind: str, vectors: np.ndarray, qv: np.ndarray, nlist: int):
    cfg = IndexConfig(kind=kind, nlist=nlist)
    t = time.perf_counter()
    cpu_index = faiss_index.build(vectors, cfg)
    build_s = time.perf_counter() - t
    size = int(faiss.serialize_index(cpu_index).size)
    index, device = faiss_index.to_device(cpu_index, cfg)
    faiss_index.tune(index, cfg)
    lat = time_single(lambda q: faiss_index.search(index, q[None], 10), qv[:LATENCY_QUERIES])
    pos, batch = time_batch(lambda q: faiss_index.search(index, q, CHUNK_K)[1], qv)
    info = {"factory": faiss_index.factory_string(cfg, *vectors.shape), "search_params": search_params(cfg),
            "device": device, "build_s": build_s, "size_bytes": size, **lat, **batch}
    return info, pos


def numpy_topk(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Exact top-k by inner product: one matrix product, argpartition, then sort the k."""
    k = min(k, vectors.shape[0])
    scores = queries @ vectors.T
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


def bench_numpy(vectors: np.ndarray, qv: np.ndarray):
    with threadpool_limits(1, user_api="blas"):  # one query: threaded BLAS only adds hand-offs (10+ ms when busy)
        lat = time_single(lambda q: numpy_topk(vectors, q[None], 10), qv[:LATENCY_QUERIES])
    pos, batch = time_batch(lambda q: numpy_topk(vectors, q, CHUNK_K), qv)
    info = {"factory": "numpy matmul+argpartition", "search_params": "blas=1 (p50/p99)", "device": "cpu", "build_s": 0.0,
            "size_bytes": int(vectors.nbytes), **lat, **batch}
    return info, pos


def overlap_at10(pos: np.ndarray, ref: np.ndarray) -> float:
    """Mean share of the reference's top-10 positions that ``pos`` also has in its top 10."""
    shares = []
    for a, b in zip(pos, ref):
        want = {int(x) for x in b[:10] if x >= 0}
        got = {int(x) for x in a[:10] if x >= 0}
        shares.append(len(got & want) / max(1, len(want)))
    return float(np.mean(shares)) if shares else 0.0


def eval_indexes(vectors, qv, samples, qrels, nodes) -> dict[str, dict]:
    nlist = max(1, round(math.sqrt(len(vectors))))
    results, positions = {}, {}
    for kind in KINDS:
        results[kind], positions[kind] = bench_faiss_kind(kind, vectors, qv, nlist)
        log(f"  faiss {kind}: {results[kind]['factory']} on {results[kind]['device']}")
    results["numpy"], positions["numpy"] = bench_numpy(vectors, qv)
    for name, pos in positions.items():
        rankings = {s.id: doc_ranking(nodes, row) for s, row in zip(samples, pos)}
        results[name]["recall@10_vs_flat"] = overlap_at10(pos, positions["flat"])
        results[name]["ndcg@10"] = quality(qrels, rankings)["ndcg@10"]
    return results


def embed_throughput(embedder, texts: list[str]) -> dict[str, float]:
    """Passages/s on a sample, bypassing the embedding cache (the model is shared, not reloaded)."""
    embedder.dim  # noqa: B018 - loads the model once, before the copy shares it
    uncached = copy.copy(embedder)
    if hasattr(uncached, "cache"):
        uncached.cache = None
    sample = texts[:THROUGHPUT_SAMPLE]
    uncached.embed(sample[:1])  # warm-up
    t = time.perf_counter()
    uncached.embed(sample)
    dt = max(time.perf_counter() - t, 1e-9)
    return {"sample_passages": len(sample), "sample_s": dt, "passages_per_s": len(sample) / dt}


def run_dataset(name: str, folder: Path, split: str, embedder, args) -> dict:
    docs, samples, dropped = load_dataset(folder, split, args.max_docs, args.max_queries)
    if dropped:
        log(f"{name}: dropped {len(dropped)} docs with empty text: {', '.join(dropped[:10])}")
    qrels = {s.id: s.metadata["qrels"] for s in samples}
    log(f"{name}: {len(docs)} docs, {len(samples)} queries; building index (chunk, embed, flat, bm25)")
    with tempfile.TemporaryDirectory(prefix="ragdoctor-bench-") as tmp:
        main_bm25 = {"bm25_k1": args.bm25_main[0], "bm25_b": args.bm25_main[1]} if args.bm25_main else {}
        store = build_index(docs, Path(tmp) / "idx", embedder, chunking=args.chunking,
                            index_cfg=IndexConfig(kind="flat", **main_bm25))
        flat = faiss_index.load(store.index_dir / "dense.faiss")
        vectors = np.ascontiguousarray(flat.reconstruct_n(0, flat.ntotal), dtype=np.float32)  # embedded once
        qv = embedder.embed([s.question for s in samples])
        chunks_per_doc = np.bincount(np.unique([n.metadata["doc_id"] for n in store.nodes], return_inverse=True)[1])
        build = {f"{k}_s": v for k, v in store.build_seconds.items()}
        build.update(index_device=store.device, embedding=embed_throughput(embedder, [embedding_text(n) for n in store.nodes]))
        log(f"{name}: {len(store.nodes)} chunks; retrievers")
        retrievers, all_hits = eval_retrievers(store, embedder, samples, qrels)
        aggregation = eval_aggregation(store, samples, qrels, all_hits)
        bm25_rows = eval_bm25_settings(store, embedder, samples, qrels, args.bm25) if args.bm25 else {}
        rerank = None
        if not args.no_rerank:
            log(f"{name}: rerank stage (top {args.rerank_depth} chunks, cache {args.rerank_cache})")
            rerank = eval_rerank(store, samples, qrels, all_hits, args)
        indexes = {}
        if not args.no_indexes:
            log(f"{name}: faiss index kinds")
            indexes = eval_indexes(vectors, qv, samples, qrels, store.nodes)
    return {"split": split, "n_docs": len(docs), "n_chunks": len(vectors), "n_queries": len(samples),
            "dropped_empty_docs": dropped,
            "chunks_per_doc": {"mean": float(chunks_per_doc.mean()), "max": int(chunks_per_doc.max()),
                               "share_le_2": float(np.mean(chunks_per_doc <= 2))},
            "dim": int(vectors.shape[1]), "build": build, "retrievers": retrievers, "aggregation": aggregation,
            "rerank": rerank, "indexes": indexes, "bm25_settings": bm25_rows}


def print_tables(name: str, r: dict) -> None:
    title = (f"\n{name} ({r['split']}): {r['n_docs']} docs, {r['n_chunks']} chunks "
             f"({r['chunks_per_doc']['mean']:.2f}/doc), {r['n_queries']} queries. Retrieval quality (document level)")
    rows = [[m, v["ndcg@10"], v[f"recall@{DOC_K}"], v["mrr@10"], v["queries_per_s"]] for m, v in r["retrievers"].items()]
    print(render(["retriever", "nDCG@10", f"recall@{DOC_K}", "MRR@10", "queries/s"], rows, title))
    rows = [[m, v["ndcg@10"], v[f"recall@{DOC_K}"], v["mrr@10"]] for m, v in r["aggregation"].items()]
    print(render(["chunk hits -> documents", "nDCG@10", f"recall@{DOC_K}", "MRR@10"], rows,
                 f"\n{name}: document-level aggregation (a document's best chunk, or the sum of its best 2 / 3)"))
    if r["rerank"]:
        lat = r["rerank"]["latency"]
        rows = [[m, v["ndcg@10"], v[f"recall@{DOC_K}"], v["mrr@10"]] for m, v in r["rerank"]["rows"].items()]
        print(render(["first stage +rerank (w: reranker share)", "nDCG@10", f"recall@{DOC_K}", "MRR@10"], rows,
                     f"\n{name}: rerank stage ({lat['model']}, max_length {lat['max_length']}, int8 FFN "
                     f"{lat['int8_ffn']}); model time per query p50 {fmt(lat['model_ms_p50'])} ms, p95 "
                     f"{fmt(lat['model_ms_p95'])} ms over {lat['queries_timed']} uncached queries"))
    if r.get("bm25_settings"):
        rows = [[m, v["ndcg@10"], v[f"recall@{DOC_K}"], v["mrr@10"]] for m, v in r["bm25_settings"].items()]
        print(render(["retriever [BM25 setting]", "nDCG@10", f"recall@{DOC_K}", "MRR@10"], rows,
                     f"\n{name}: BM25 and hybrid rows with other BM25 parameters (--bm25)"))
    if not r["indexes"]:
        return
    rows = [[k, v["factory"], v["search_params"], v["device"], v["build_s"], v["p50_ms"], v["p99_ms"], v["batch_qps"],
             v["size_bytes"] / 2**20, v["recall@10_vs_flat"], v["ndcg@10"]] for k, v in r["indexes"].items()]
    print(render(["index", "factory", "search", "device", "build s", "p50 ms", "p99 ms", "batch q/s", "size MiB",
                  "R@10 vs flat", "nDCG@10"], rows, f"\n{name}: dense index kinds (dim {r['dim']})"))
    b, e = r["build"], r["build"]["embedding"]
    rows = [["chunking", b.get("chunk_s"), "-"], ["embed corpus (cache may hit)", b.get("embed_s"), r["n_chunks"] / max(b.get("embed_s", 0), 1e-9)],
            [f"embed {e['sample_passages']} passages, no cache", e["sample_s"], e["passages_per_s"]],
            ["faiss flat build", b.get("faiss_s"), "-"], ["bm25 build", b.get("bm25_s"), "-"]]
    print(render(["stage", "seconds", "passages/s"], rows, f"\n{name}: build cost (index on {b['index_device']})"))


def machine_info(embedder, results: dict) -> dict:
    devices = {v["device"] for r in results.values() for v in r["indexes"].values()}
    devices |= {r["build"]["index_device"] for r in results.values()}
    embed_device = str(embedder.model.device) if hasattr(embedder, "model") else "cpu"
    return {"cpu_count": os.cpu_count(), "platform": platform.platform(), "processor": platform.processor(),
            "python": platform.python_version(), "numpy": np.__version__, "faiss_version": faiss.__version__,
            "faiss_gpus": faiss_index.gpu_count(), "faiss_omp_threads": faiss.omp_get_max_threads(),
            "embedder": embedder.model_id, "embedder_device": embed_device,
            "gpu_used": "gpu" in devices or embed_device.startswith("cuda"), "index_devices": sorted(devices),
            "loadavg_start": LOAD_START, "loadavg_end": list(os.getloadavg())}  # busy machine -> noisy timings


def parse_args(argv):
    p = argparse.ArgumentParser(description="Retrieval benchmark (quality, faiss index kinds, build cost).")
    p.add_argument("--datasets", default=",".join(DATASETS), help=f"comma-separated, from: {', '.join(DATASETS)}")
    p.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data", help="folder holding the datasets")
    p.add_argument("--max-queries", type=int, default=None, help="first N labelled queries per dataset")
    p.add_argument("--max-docs", type=int, default=None, help="at most N docs (judged docs of kept queries first)")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "retrieval.json")
    p.add_argument("--embedder", default="minilm",
                   help="minilm (bundled), fake, or a sentence-transformers folder (e.g. ragdoctor models mpnet's)")
    p.add_argument("--chunk-size", type=int, default=CHUNKING.chunk_size, help="tokens per chunk (chunking.chunk_size)")
    p.add_argument("--chunk-overlap", type=int, default=CHUNKING.chunk_overlap)
    p.add_argument("--embedding-backend", default="torch", choices=["torch", "torch-bf16"],
                   help="how the embedder runs (embedding.backend)")
    p.add_argument("--no-indexes", action="store_true", help="skip the faiss index kinds (quality tables only)")
    p.add_argument("--no-rerank", action="store_true", help="skip the rerank stage (the slow part on a CPU)")
    p.add_argument("--rerank-depth", type=int, default=RetrievalConfig().rerank_depth, help="chunks reranked per query")
    p.add_argument("--rerank-max-length", type=int, default=RetrievalConfig().rerank_max_length)
    p.add_argument("--reranker", default=RetrievalConfig().reranker,
                   help="the rerank stage's cross-encoder: a registered name or a CrossEncoder folder")
    p.add_argument("--rerank-first", default="hybrid", help="comma-separated first-stage rows the reranker reads "
                   "(names as in the quality table, e.g. 'hybrid,hybrid minmax w=0.5')")
    p.add_argument("--rerank-cache", type=Path, default=models.cache_dir() / "rerank-bench.sqlite",
                   help="reranker logits kept between runs")
    p.add_argument("--bm25", default="", help="extra BM25 settings to measure, K1:B comma-separated (e.g. 0.9:0.4,1.2:0.75); "
                   "the main rows use the index defaults")
    p.add_argument("--bm25-main", default="", help="K1:B for the main rows (and the rerank stage's first stages) "
                   "instead of the index defaults")
    args = p.parse_args(argv)
    def bm25_settings(flag: str, text: str, most: int | None = None) -> list[tuple[float, float]]:
        try:
            out = [(float(k1), float(b)) for k1, b in (x.split(":") for x in text.split(",") if x.strip())]
        except ValueError:
            out = None
        if out is None or (most is not None and len(out) > most):
            p.error(f"{flag}: expected {'K1:B' if most == 1 else 'K1:B pairs separated by commas'}, got {text!r}")
        return out

    args.bm25_main = (bm25_settings("--bm25-main", args.bm25_main, most=1) or [None])[0]
    args.bm25 = bm25_settings("--bm25", args.bm25)
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    args.rerank_first = [f.strip() for f in args.rerank_first.split(",") if f.strip()]
    known = {*MODES, *(f"hybrid {f} w={w}" for f in ("minmax", "zscore") for w in FUSION_WEIGHTS)}
    if not set(args.rerank_first) <= known:
        p.error(f"--rerank-first: unknown row(s) {sorted(set(args.rerank_first) - known)}; choose from {sorted(known)}")
    unknown = [d for d in args.datasets if d not in DATASETS]
    if unknown or not args.datasets:
        p.error(f"unknown dataset(s) {unknown}; choose from {', '.join(DATASETS)}")
    try:
        args.chunking = ChunkingConfig(chunk_size=args.chunk_size, chunk_overlap=args.chunk_overlap)
    except ValidationError as exc:  # name the field and the bound it broke
        err = exc.errors()[0]
        p.error(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = [str(args.data_dir / d) for d in args.datasets if not (args.data_dir / d).is_dir()]
    if missing:
        print(f"retrieval bench: data folder not found: {', '.join(missing)} (use --data-dir)", file=sys.stderr)
        return 2
    results = {}
    try:
        embedder = make_embedder(args.embedder, backend=args.embedding_backend)
        for name in args.datasets:
            results[name] = run_dataset(name, args.data_dir / name, DATASETS[name], embedder, args)
            print_tables(name, results[name])
    except InputError as exc:
        print(f"retrieval bench: {exc}", file=sys.stderr)
        return 2
    settings = {"chunking": args.chunking.model_dump(), "chunk_k": CHUNK_K, "doc_k": DOC_K, "latency_queries": LATENCY_QUERIES,
                "max_docs": args.max_docs, "max_queries": args.max_queries, "data_dir": str(args.data_dir),
                "index_defaults": IndexConfig().model_dump(exclude={"kind", "nlist"}),
                "bm25_main": args.bm25_main, "nlist": "round(sqrt(n_chunks))",
                "fusion_weights": FUSION_WEIGHTS, "rerank": None if args.no_rerank else {
                    "first_stages": args.rerank_first, "depth": args.rerank_depth, "weights": RERANK_WEIGHTS,
                    "max_length": args.rerank_max_length, "passage": "chunk text (no title)"}}
    report = {"created": datetime.now(UTC).isoformat(timespec="seconds"), "machine": machine_info(embedder, results),
              "settings": settings, "datasets": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
