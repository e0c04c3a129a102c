"""bench/retrieval_default.py end to end on a tiny synthetic BEIR folder: fake embedder, the real bundled reranker."""
import json

import numpy as np
import pytest

from tests.bench import beir_folder, load_bench


@pytest.fixture(scope="module")
def bench():
    return load_bench("retrieval_default")


def test_the_default_is_what_the_config_says(bench):
    from rag.config import IndexConfig, RetrievalConfig
    s = bench.default_setting()
    r, i = RetrievalConfig(), IndexConfig()
    assert (s.mode, s.fusion, s.dense_weight, s.bm25) == (r.mode, r.fusion, r.dense_weight, (i.bm25_k1, i.bm25_b))
    assert s.rerank_weight == (r.rerank_weight if r.rerank else None)
    assert s != bench.PREVIOUS  # the benchmark compares two different settings


def test_both_settings_paired_over_every_query_and_each_half(tmp_path, bench, capsys):
    beir_folder(tmp_path / "data" / "scifact", n_docs=40, n_queries=16)
    out = tmp_path / "res.json"
    rc = bench.main(["--data-dir", str(tmp_path / "data"), "--datasets", "scifact:train", "--embedder", "fake",
                     "--index-root", str(tmp_path / "idx"), "--out", str(out)])
    assert rc == 0
    report = json.loads(out.read_text())
    (r,) = report["results"]
    assert r["queries"] == 16 and r["all"]["n"] == 16
    assert r["choose"]["n"] + r["confirm"]["n"] == 16
    assert r["default"] == bench.default_setting().name and r["previous"] == bench.PREVIOUS.name
    for part in ("all", "choose", "confirm"):
        m = r[part]
        if m["n"]:
            assert m["difference"] == pytest.approx(m["default"] - m["previous"])
            lo, hi = m["ci"]
            assert lo <= m["difference"] <= hi and m["verdict"] in ("beats", "ties", "loses")
    assert r["rerank_ms_p50"] is not None and r["rerank_ms_p50"] > 0  # the rerank stage really ran
    assert r["reranker"] == "rerank-minilm" and r["reranker_precision"] in ("bf16", "int8", "fp32")
    per = r["per_query"]
    assert len(per["query_ids"]) == len(per["default"]) == len(per["previous"]) == 16
    assert float(np.mean(per["default"])) == pytest.approx(r["all"]["default"])
    # the halves' means weight back to the whole
    ns = np.array([r["choose"]["n"], r["confirm"]["n"]])
    means = np.array([r["choose"]["default"] or 0, r["confirm"]["default"] or 0])
    assert float((ns * means).sum() / 16) == pytest.approx(r["all"]["default"])
    printed = capsys.readouterr().out
    assert "previous nDCG@10" in printed and "scifact train" in printed and str(out) in printed
