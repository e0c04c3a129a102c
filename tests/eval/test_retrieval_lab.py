"""The retrieval lab's choice (eval/retrieval_lab.py): settings and their configuration lines, the stable split of
queries, and the verdict: chosen on one half, confirmed against the current setting on the other."""
import numpy as np

from eval import retrieval_lab as lab
from rag.config import RetrievalConfig


def test_settings_cover_every_first_stage_and_the_rerank_shares():
    names = [s.name for s in lab.settings([(0.9, 0.4)], rerank=True)]
    assert len(names) == len(set(names))
    assert {"dense", "bm25", "hybrid rrf", "hybrid zscore w=0.5", "bm25, bm25 k1=0.9 b=0.4",
            "hybrid minmax w=0.3, bm25 k1=0.9 b=0.4", "hybrid rrf, +rerank w=0.25",
            "hybrid zscore w=0.7, bm25 k1=0.9 b=0.4, +rerank w=0.5"} <= set(names)
    assert not any("dense" in n and "k1" in n for n in names)  # BM25's setting does not change dense retrieval
    assert not any("+rerank" in n for n in (s.name for s in lab.settings(rerank=False)))
    odd = lab.current_setting(RetrievalConfig(mode="hybrid", fusion="minmax", dense_weight=0.6, rerank=True,
                                              rerank_weight=0.4))
    assert odd.name == "hybrid minmax w=0.6, +rerank w=0.4" and odd in lab.settings(rerank=False, current=odd)


def test_a_settings_configuration_lines():
    s = lab.Setting("hybrid", "zscore", 0.5, (0.9, 0.4), 0.25)
    assert s.config() == {"retrieval": {"mode": "hybrid", "fusion": "zscore", "dense_weight": 0.5, "rerank": True,
                                        "rerank_weight": 0.25}, "index": {"bm25_k1": 0.9, "bm25_b": 0.4}}
    snippet = lab.toml_snippet({"config": s.config()})
    assert snippet.splitlines() == ["[pipeline.retrieval]", 'mode = "hybrid"', 'fusion = "zscore"', "dense_weight = 0.5",
                                    "rerank = true", "rerank_weight = 0.25", "[pipeline.index]", "bm25_k1 = 0.9",
                                    "bm25_b = 0.4"]
    assert lab.current_setting(RetrievalConfig()).config() == {"retrieval": {"mode": "hybrid", "fusion": "zscore",
                                                                              "dense_weight": 0.5, "rerank": True,
                                                                              "rerank_weight": 0.25}}
    assert lab.current_setting(RetrievalConfig(fusion="rrf", rerank=False)).config() == \
        {"retrieval": {"mode": "hybrid", "fusion": "rrf", "rerank": False}}


def test_the_split_is_stable_and_about_even():
    ids = [f"q{i}" for i in range(400)]
    halves = [lab.half(q) for q in ids]
    assert halves == [lab.half(q) for q in ids] and 150 < halves.count("choose") < 250


def _rows(per_query, halves):
    return [{"name": n, "ndcg@10_choose": float(v[halves == "choose"].mean())} for n, v in per_query.items()]


def test_the_choice_is_made_on_one_half_and_judged_on_the_other():
    rng = np.random.default_rng(0)
    halves = np.array(["choose", "confirm"] * 100)
    base = rng.uniform(0.3, 0.7, 200)
    current = lab.Setting("hybrid")
    # 'better' gains on every query; 'lucky' gains only on the choosing half, and by more
    per_query = {"hybrid rrf": base, "better": base + 0.05, "lucky": np.where(halves == "choose", base + 0.2, base)}
    out = lab._verdict(_rows(per_query, halves), per_query, halves, current, 200, None, seed=0)
    assert out["chosen"] == "lucky" and out["confirm"]["verdict"] == "ties"  # a choice that does not carry over
    del per_query["lucky"]
    out = lab._verdict(_rows(per_query, halves), per_query, halves, current, 200, None, seed=0)
    c = out["confirm"]
    assert out["chosen"] == "better" and c["verdict"] == "beats" and c["ci"][0] > 0
    assert abs(c["difference"] - 0.05) < 1e-9 and out["n_choose"] == out["n_confirm"] == 100


def test_no_confirming_queries_is_unmeasured_not_a_choice():
    halves = np.array(["choose"] * 10)
    per_query = {"hybrid rrf": np.full(10, 0.5)}
    out = lab._verdict(_rows(per_query, halves), per_query, halves, lab.Setting("hybrid"), 10, None, seed=0)
    assert out["chosen"] is None and out["unmeasured"]


class _Node:
    def __init__(self, doc):
        self.metadata, self.text, self.node_id = {"doc_id": doc, "title": ""}, f"text of {doc}", f"{doc}#0"


class _Hit:
    def __init__(self, position, score):
        self.position, self.score = position, score


class _Store:
    def __init__(self, bm25):
        self.nodes, self.bm25 = [_Node(f"d{i}") for i in range(6)], bm25


def _retriever_factory(seen):
    """Dense ranks d0 first for every query; anything reading BM25 ranks the query's own document first."""
    def make(store, embedder, cfg, mode):
        seen.append((mode, cfg.fusion, store.bm25))
        make.rrf_k.add(cfg.rrf_k)

        class R:
            def search_batch(self, questions, k):
                out = []
                for q in questions:
                    own = int(q[1:])
                    order = [0, 1, 2, 3, 4, 5] if mode == "dense" else [own] + [p for p in range(6) if p != own]
                    out.append([_Hit(p, 1.0 / (r + 1)) for r, p in enumerate(order)])
                return out
        return R()
    make.rrf_k = set()
    return make


def test_run_lab_measures_each_setting_and_puts_the_indexs_bm25_back():
    store, seen = _Store(bm25="own"), []
    questions = [f"q{i % 6}" for i in range(40)]
    ids = [f"query-{i}" for i in range(40)]
    qrels = {f"query-{i}": {f"d{i % 6}": 1} for i in range(40)}
    built = []
    out = lab.run_lab(store, None, questions, ids, qrels, lab.settings([(0.9, 0.4)], rerank=False),
                      lab.Setting("hybrid"), make_retriever=_retriever_factory(seen),
                      bm25_build=lambda texts, k1, b: built.append((k1, b, len(texts))) or "rebuilt")
    rows = {r["name"]: r for r in out["rows"]}
    assert rows["bm25"]["ndcg@10"] == 1.0 and rows["dense"]["ndcg@10"] < 1.0
    assert built == [(0.9, 0.4, 6)] and store.bm25 == "own"  # rebuilt in memory, then the index's own again
    assert {b for m, _f, b in seen if m != "dense"} == {"own", "rebuilt"}
    assert out["chosen"] == "hybrid rrf" and out["n_queries"] == 40  # every BM25 reader is perfect: a tie keeps the
    assert out["confirm"]["verdict"] == "ties"                        # current setting


def test_a_dense_only_index_measures_dense_only_and_says_so():
    store = _Store(bm25=None)
    qrels = {f"query-{i}": {f"d{i % 6}": 1} for i in range(20)}
    out = lab.run_lab(store, None, [f"q{i % 6}" for i in range(20)], list(qrels), qrels, lab.settings(rerank=False),
                      lab.Setting("hybrid"), make_retriever=_retriever_factory([]), bm25_build=None)
    assert [r["name"] for r in out["rows"]] == ["dense"] and "no BM25" in out["note"]
    assert out["chosen"] is None  # the current (hybrid) setting cannot run on this index, and the reason says so
    assert out["unmeasured"] == "the current setting (hybrid rrf) could not be measured: the index has no BM25 part"


def test_each_reason_for_no_choice_is_the_true_one():
    store = _Store(bm25="own")
    qrels = {"query-0": {"d0": 1}}
    one = lab.run_lab(store, None, ["q0"], ["query-0"], qrels, lab.settings(rerank=False), lab.Setting("hybrid"),
                      make_retriever=_retriever_factory([]))
    empty = "choosing" if lab.half("query-0") == "confirm" else "confirming"
    assert one["unmeasured"] == f"no labelled query in the {empty} half (1 query in all): more are needed"
    none = lab.run_lab(store, None, ["q0"], ["query-0"], {"query-0": {"d0": 0}}, lab.settings(rerank=False),
                       lab.Setting("hybrid"), make_retriever=_retriever_factory([]))
    assert none["unmeasured"].startswith("no labelled query") and none["n_queries"] == 0
    assert none["rows"] == [] and none["chosen"] is None  # no mean over no query (NaN) in the JSON
    qrels = {f"query-{i}": {f"d{i % 6}": 1} for i in range(20)}
    rr = lab.run_lab(store, None, [f"q{i % 6}" for i in range(20)], list(qrels), qrels, lab.settings(rerank=False),
                     lab.Setting("hybrid", rerank_weight=0.5), make_retriever=_retriever_factory([]))
    assert rr["unmeasured"] == ("the current setting (hybrid rrf, +rerank w=0.5) could not be measured: it has a rerank "
                                "stage and the lab runs without the reranker")


def test_labels_that_name_chunks_are_ranked_by_chunk_and_the_configurations_rrf_k_is_used():
    """As eval reads them: {"d3#0": 1} names a chunk, so the chunk ranking is scored, not the document ranking
    (which would score 0 everywhere and still 'choose')."""
    store, seen = _Store(bm25="own"), []
    make = _retriever_factory(seen)
    qrels = {f"query-{i}": {f"d{i % 6}#0": 1} for i in range(40)}
    out = lab.run_lab(store, None, [f"q{i % 6}" for i in range(40)], list(qrels), qrels,
                      lab.settings([], rerank=False), lab.Setting("hybrid"), make_retriever=make, rrf_k=7)
    rows = {r["name"]: r for r in out["rows"]}
    assert rows["bm25"]["ndcg@10"] == 1.0 and 0 < rows["dense"]["ndcg@10"] < 1.0
    assert out["chunk_level_queries"] == 40 and out["rrf_k"] == 7 and make.rrf_k == {7}


def test_labels_no_setting_retrieves_leave_the_lab_without_a_choice():
    store = _Store(bm25="own")
    qrels = {f"query-{i}": {"elsewhere": 1} for i in range(20)}
    out = lab.run_lab(store, None, [f"q{i % 6}" for i in range(20)], list(qrels), qrels,
                      lab.settings([], rerank=False), lab.Setting("hybrid"), make_retriever=_retriever_factory([]))
    assert out["chosen"] is None and "no setting ranked a relevant id" in out["unmeasured"]
    assert all(r["ndcg@10"] == 0.0 for r in out["rows"])  # the rows stay, measured at 0
