"""`ragdoctor index-lab --out FILE.json`: every faiss index kind over the corpus's vectors (eval/index_lab.py), written
as the JSON the dashboard's Index lab page reads. Vectors come from the index folder (a flat index holds them
exactly); any other index kind's chunks are re-embedded (the embedding cache makes that a lookup)."""
from __future__ import annotations

import argparse
import json
import sys

from corpora.errors import UsageError
from corpora.paths import output_file, refuse_symlink_loop, write_report
from ragdoctor.cmd_pipeline import checked_config

MIN_VECTORS = 2  # the fewest the trained kinds (IVF, PQ) build on

# what the lab's JSON holds near its start: an existing --out without it is not one it wrote, and is refused
LAB_SIGNATURE = '"n_vectors"'


def _queries(found, embedder, vectors):
    from eval.index_lab import sample_queries  # noqa: PLC0415 - lazy: see cmd_index

    if found is None:
        q, ids = sample_queries(vectors)
        return q, ids, None, "a seeded sample of 200 chunk vectors"
    from rag.store import warn_query_cut_off  # noqa: PLC0415 - lazy: see cmd_index

    warn_query_cut_off(found.questions, embedder)
    return embedder.embed(found.questions), found.ids, found.qrels, found.source


def cmd_index_lab(args: argparse.Namespace) -> int:
    refuse_symlink_loop(args.out)  # before the work: writing there would fail only at the end
    out = output_file(args.out, what="index lab JSON", signature=LAB_SIGNATURE)
    import numpy as np  # noqa: PLC0415 - lazy: see cmd_index

    from eval.index_lab import run_lab  # noqa: PLC0415
    from rag.chunking import embedding_text  # noqa: PLC0415
    from rag.session import embedder_for, open_index  # noqa: PLC0415
    from rag.store import load_index  # noqa: PLC0415
    from ragdoctor.labelled_queries import labelled_queries  # noqa: PLC0415

    cfg = checked_config(args)
    found = labelled_queries(cfg.corpus, args.questions, args.split, own_index=args.index is None,
                             labelled_only=False)  # before any index; unlabelled questions are timed too
    embedder = embedder_for(cfg)
    if args.index:
        store = load_index(args.index, embedder)
    else:
        store, _ = open_index(cfg, embedder, strict_embedder=True)
    if store.manifest.factory == "Flat":
        from rag import faiss_index  # noqa: PLC0415 - reads a folder name that is not UTF-8 too

        cpu = faiss_index.load(store.index_dir / "dense.faiss")
        vectors, vector_source = cpu.reconstruct_n(0, cpu.ntotal), "the index folder's flat index"
    else:
        vectors = embedder.embed([embedding_text(n) for n in store.nodes])
        vector_source = "re-embedded chunks (the index is not flat)"
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if len(vectors) < MIN_VECTORS:  # the IVF and PQ kinds train on the vectors: one cannot make two clusters
        raise UsageError(f"index-lab: the index holds {len(vectors)} chunk vector{'s' * (len(vectors) != 1)}; "
                         f"comparing the index kinds needs at least {MIN_VECTORS} (a larger corpus)")
    queries, ids, qrels, query_source = _queries(found, embedder, vectors)
    doc_ids, chunk_ids = [n.metadata["doc_id"] for n in store.nodes], [n.node_id for n in store.nodes]
    if found is not None:
        found.warn_unknown(store.label_targets())
    lab = run_lab(vectors, queries, doc_ids=doc_ids, chunk_ids=chunk_ids, query_ids=ids, qrels=qrels,
                  nlist=args.nlist, log=lambda m: print(f"  {m}", file=sys.stderr))
    lab.update(index_dir=str(store.index_dir), embedder=store.manifest.embedder_id, vectors_from=vector_source,
               queries_from=query_source, n_documents=store.manifest.n_documents)
    print(f"{'index':<20} {'MiB':>8} {'x flat':>7} {'p50 ms':>8} {'p99 ms':>8} {'R@10':>10} {'nDCG@10':>10}")
    for r in lab["rows"]:
        nd = "unmeasured" if r["ndcg@10"] is None else f"{r['ndcg@10']:.3f}"
        rc = "unmeasured" if r["recall@10_vs_flat"] is None else f"{r['recall@10_vs_flat']:.3f}"
        print(f"{r['name']:<20} {r['index_bytes'] / 2**20:8.2f} {r['memory_vs_flat']:7.2f} {r['p50_ms']:8.3f} "
              f"{r['p99_ms']:8.3f} {rc:>10} {nd:>10}")
    for key, what in (("recall_unmeasured", "R@10"), ("ndcg_unmeasured", "nDCG@10")):
        if lab.get(key):
            print(f"{what} unmeasured: {lab[key]}")
    sys.stdout.flush()  # the table is shown before the file is written: a failed write loses none of it
    write_report(out, json.dumps(lab, indent=2))
    print(f"\nwrote {out} ({lab['n_vectors']} vectors, {lab['n_queries']} queries from {query_source})")
    return 0


def register(sub, pipeline_options) -> None:
    p = sub.add_parser("index-lab", help="build every faiss index kind over the corpus's vectors and measure them")
    p.add_argument("--out", required=True, help="the JSON file to write (the dashboard's Index lab page reads it)")
    p.add_argument("--index", help="an existing index folder to take the vectors from (default: the pipeline's)")
    p.add_argument("--questions", help="question-set JSONL to query with (default: the corpus's own questions)")
    p.add_argument("--split", help="BEIR corpus: the qrels split whose queries are used (default train)")
    p.add_argument("--nlist", type=int, help="IVF lists (default round(sqrt(vectors)))")
    pipeline_options(p, "index")
    p.set_defaults(func=cmd_index_lab)
