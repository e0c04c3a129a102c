"""`ragdoctor retrieval-lab --out FILE.json`: every retrieval setting the pipeline offers, measured on the corpus's
labelled queries; the best on one half of them, confirmed against the current configuration on the other half
(eval/retrieval_lab.py). Prints the table, the verdict and the configuration lines to use."""
from __future__ import annotations

import argparse
import json
import sys
import time

from corpora.errors import UsageError
from corpora.paths import output_file, refuse_symlink_loop, write_report
from ragdoctor.cmd_pipeline import checked_config

# what the lab's JSON holds near its start: an existing --out without it is not one it wrote, and is refused
LAB_SIGNATURE = '"lab_version"'


def _bm25_grid(text: str | None) -> list[tuple[float, float]]:
    from eval.retrieval_lab import BM25_SETTINGS  # noqa: PLC0415 - lazy: see cmd_index

    if text is None:
        return list(BM25_SETTINGS)
    grid = []
    for item in filter(None, text.split(",")):
        k1, sep, b = item.partition(":")
        try:
            grid.append((float(k1), float(b)))
        except ValueError:
            raise UsageError(f"--bm25: '{item}' is not K1:B (e.g. 0.9:0.4)") from None
        if not sep or not 0 < grid[-1][0] <= 10 or not 0 <= grid[-1][1] <= 1:
            raise UsageError(f"--bm25: '{item}' is not K1:B with 0 < K1 <= 10 and 0 <= B <= 1")
    return list(dict.fromkeys(grid))  # a setting given twice is measured once


def cmd_retrieval_lab(args: argparse.Namespace) -> int:
    refuse_symlink_loop(args.out)  # before the work: writing there would fail only at the end
    out = output_file(args.out, what="retrieval lab JSON", signature=LAB_SIGNATURE)
    t0 = time.perf_counter()
    grid = _bm25_grid(args.bm25)
    from eval.retrieval_lab import current_setting, run_lab, settings, toml_snippet  # noqa: PLC0415 - lazy: see cmd_index
    from rag.bm25 import BM25Index  # noqa: PLC0415
    from rag.reranker import CrossEncoderReranker  # noqa: PLC0415
    from rag.retrievers import make_retriever  # noqa: PLC0415
    from rag.session import embedder_for, open_index  # noqa: PLC0415
    from ragdoctor.labelled_queries import labelled_queries  # noqa: PLC0415

    cfg = checked_config(args)
    found = labelled_queries(cfg.corpus, args.questions, args.split, own_index=True)
    if found is None:
        raise UsageError(f"retrieval-lab: {cfg.corpus} has no labelled queries: pass --questions FILE (questions "
                         f"with relevant_doc_ids) or a BEIR folder with qrels/{args.split or 'train'}.tsv")
    if args.max_queries:
        found.questions, found.ids = found.questions[: args.max_queries], found.ids[: args.max_queries]
    embedder = embedder_for(cfg)
    store, _ = open_index(cfg, embedder, strict_embedder=True)
    found.warn_unknown(store.label_targets())
    current = current_setting(cfg.retrieval)
    own = (store.manifest.index.bm25_k1, store.manifest.index.bm25_b)
    grid = [g for g in grid if g != own]  # the index's own setting is measured anyway
    rerank = args.rerank is not False  # --no-rerank (a pipeline option) leaves the rerank stage out of the lab
    reranker = (CrossEncoderReranker(cfg.retrieval.reranker, max_length=cfg.retrieval.rerank_max_length)
                if rerank else None)
    candidates = settings(grid, rerank, current)
    print(f"retrieval-lab: {len(candidates)} settings on {len(found.ids)} queries from {found.source}",
          file=sys.stderr)
    lab = run_lab(store, embedder, found.questions, found.ids, found.qrels, candidates, current,
                  make_retriever=make_retriever, bm25_build=BM25Index.build, reranker=reranker,
                  rerank_depth=cfg.retrieval.rerank_depth, log=lambda m: print(f"  {m}", file=sys.stderr),
                  rrf_k=cfg.retrieval.rrf_k)
    lab.update(index_dir=str(store.index_dir), embedder=store.manifest.embedder_id, queries_from=found.source,
               index_bm25={"k1": store.manifest.index.bm25_k1, "b": store.manifest.index.bm25_b},
               reranker=cfg.retrieval.reranker if rerank else None, seconds=round(time.perf_counter() - t0, 1))
    _print(lab, toml_snippet)
    sys.stdout.flush()  # the table is shown before the file is written: a failed write loses none of it
    write_report(out, json.dumps(lab, indent=2))
    print(f"\nwrote {out}")
    return 0


def _print(lab: dict, toml_snippet) -> None:
    rows = sorted(lab["rows"], key=lambda r: -(r["ndcg@10_choose"] or 0))
    print(f"{'setting':<58} {'nDCG@10':>8} {'choose':>7} {'confirm':>8} {'R@100':>6}")
    for r in rows:
        mark = " (current)" if r["name"] == lab["current"] else ""
        f = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
        print(f"{(r['name'] + mark)[:58]:<58} {f(r['ndcg@10']):>8} {f(r['ndcg@10_choose']):>7} "
              f"{f(r['ndcg@10_confirm']):>8} {f(r['recall@100']):>6}")
    if lab["chosen"] is None:
        print(f"\nno choice: unmeasured ({lab['unmeasured']})")
        return
    c = lab["confirm"]
    lo, hi = c["ci"]
    ci = "no CI" if lo is None else f"95% CI {lo:+.3f}..{hi:+.3f}"
    verdict = c["verdict"] or f"unmeasured: {c.get('reason') or 'no CI'}"
    print(f"\nchosen on {lab['n_choose']} queries: {lab['chosen']}")
    print(f"confirmed on the other {lab['n_confirm']}: nDCG@10 {c['chosen']:.3f} vs current {c['current']:.3f} "
          f"({c['difference']:+.3f}, {ci}: {verdict})")
    if lab["chosen"] == lab["current"]:
        print("keep the current configuration: it is the best setting on the choosing half")
        return
    if c["verdict"] != "beats":
        print("keep the current configuration: the best setting does not beat it on the confirming half")
        return
    chosen = next(r for r in lab["rows"] if r["name"] == lab["chosen"])
    print("to use it (ragdoctor.toml; a changed [pipeline.index] rebuilds the index):\n" + toml_snippet(chosen))


def register(sub, pipeline_options) -> None:
    p = sub.add_parser("retrieval-lab", help="measure every retrieval setting on the corpus's labelled queries and "
                                             "choose one on half of them, confirmed on the other half")
    p.add_argument("--out", required=True, help="the JSON file to write")
    p.add_argument("--questions", help="question-set JSONL with relevant_doc_ids (default: the corpus's own)")
    p.add_argument("--split", help="BEIR corpus: the qrels split whose queries are used (default train)")
    p.add_argument("--bm25", help="BM25 K1:B settings to try beside the index's (default 1.2:0.75,1.5:0.75,0.9:0.4; "
                                  "'' none)")
    p.add_argument("--max-queries", type=int, help="use the first N labelled queries (those that name a relevant "
                                                   "document)")
    pipeline_options(p, "index", "retrieval")
    p.set_defaults(func=cmd_retrieval_lab)
