import numpy as np

from eval.index_lab import run_lab, sample_queries


def test_lab_measures_every_kind_against_flat():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((800, 16)).astype("float32")
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    doc_ids = [f"d{i // 2}" for i in range(len(x))]
    q, ids = sample_queries(x, 50)
    qrels = {qid: {doc_ids[int(qid.split("-")[1])]: 1} for qid in ids}  # each sampled chunk's own document
    lab = run_lab(x, q, doc_ids=doc_ids, query_ids=ids, qrels=qrels)
    rows = {r["name"]: r for r in lab["rows"]}
    assert lab["nlist"] == 20 and len(rows) == len(lab["rows"])  # names unique: nprobe 8 is the default at 20 lists
    assert rows["flat"]["recall@10_vs_flat"] == 1.0 and rows["flat"]["ndcg@10"] == 1.0  # a vector finds itself first
    assert rows["sq8"]["memory_vs_flat"] < 0.5 and rows["ivfpq"]["memory_vs_flat"] < rows["flat"]["memory_vs_flat"]
    assert rows["ivfpq+refine flat"]["recall@10_vs_flat"] >= rows["ivfpq"]["recall@10_vs_flat"]
    assert all(r["p99_ms"] >= r["p50_ms"] > 0 for r in rows.values())


def test_no_labels_is_unmeasured_not_zero():
    x = np.eye(50, 8, dtype="float32") + 0.01
    lab = run_lab(x, x[:5], doc_ids=[str(i) for i in range(50)], query_ids=list("abcde"), qrels=None)
    assert lab["ndcg_unmeasured"] and all(r["ndcg@10"] is None for r in lab["rows"])


def test_rows_are_named_for_what_is_built_and_zero_grades_are_no_labels():
    x = np.eye(50, 8, dtype="float32") + 0.01
    logged: list[str] = []
    lab = run_lab(x, x[:5], doc_ids=[str(i) for i in range(50)], query_ids=list("abcde"),
                  qrels={q: {"0": 0} for q in "abcde"}, nlist=1000, log=logged.append)
    assert lab["nlist"] == 1 and lab["nlist_asked"] == 1000  # 50 vectors train one list: not "nprobe=250 of 1000"
    assert [r["name"] for r in lab["rows"] if r["kind"] == "ivf"] == ["ivf nprobe=1"]
    assert any("nlist 1000 needs 39000 vectors" in m for m in logged)
    assert lab["n_labelled_queries"] == 0 and lab["ndcg_unmeasured"] and all(r["ndcg@10"] is None for r in lab["rows"])


def test_labels_naming_chunks_are_scored_on_the_chunk_ranking():
    x = np.random.default_rng(0).standard_normal((50, 16)).astype("float32")
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    doc_ids = [f"d{i // 5}" for i in range(50)]
    chunk_ids = [f"d{i // 5}#{i % 5}" for i in range(50)]
    q, ids = sample_queries(x, 5)
    qrels = {qid: {chunk_ids[int(qid.split("-")[1])]: 1} for qid in ids}  # each sampled chunk names itself
    lab = run_lab(x, q, doc_ids=doc_ids, chunk_ids=chunk_ids, query_ids=ids, qrels=qrels)
    assert {r["name"]: r["ndcg@10"] for r in lab["rows"]}["flat"] == 1.0  # a document ranking would score 0
    assert run_lab(x, q, doc_ids=doc_ids, query_ids=ids, qrels=qrels)["rows"][0]["ndcg@10"] == 0.0  # (without ids)


def test_recall_against_flat_on_ten_vectors_or_fewer_is_unmeasured():
    x = np.eye(8, 8, dtype="float32")
    lab = run_lab(x, x[:3], doc_ids=[str(i) for i in range(8)], query_ids=list("abc"), qrels=None)
    assert all(r["recall@10_vs_flat"] is None for r in lab["rows"]) and "8 vectors" in lab["recall_unmeasured"]
