"""bench/retrieval.py end to end on a tiny synthetic BEIR folder with the fake embedder (no model, seconds)."""
import json
from pathlib import Path

import pytest

from tests.bench import beir_folder, load_bench

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    module = load_bench("retrieval")
    return module


def test_bench_writes_every_retriever_and_index_kind(tmp_path, bench, capsys):
    beir_folder(tmp_path / "data" / "scifact")
    out = tmp_path / "res.json"
    rc = bench.main(["--data-dir", str(tmp_path / "data"), "--datasets", "scifact", "--embedder", "fake",
                     "--out", str(out), "--rerank-depth", "4", "--rerank-cache", str(tmp_path / "rerank.sqlite")])
    assert rc == 0
    report = json.loads(out.read_text())
    ds = report["datasets"]["scifact"]
    assert ds["n_docs"] == 48 and ds["n_queries"] == 12 and ds["dropped_empty_docs"] == ["empty"]
    assert ds["n_chunks"] >= ds["n_docs"]

    fusions = {f"hybrid {f} w={w}" for f in ("minmax", "zscore") for w in (0.3, 0.5, 0.7)}
    assert set(ds["retrievers"]) == {"bm25", "dense", "hybrid"} | fusions
    for mode, m in ds["retrievers"].items():
        for key in ("ndcg@10", "recall@100", "mrr@10"):
            assert 0.0 <= m[key] <= 1.0, (mode, key, m[key])
        assert m["retriever"] == mode.split()[0] and m["queries_per_s"] > 0
    agg = ds["aggregation"]
    assert agg["hybrid doc=max"]["ndcg@10"] == pytest.approx(ds["retrievers"]["hybrid"]["ndcg@10"])  # max: first hit
    assert set(agg) == {f"{r} doc={a}" for r in ("hybrid", "hybrid minmax w=0.5") for a in ("max", "sum2", "sum3")}
    rows, lat = ds["rerank"]["rows"], ds["rerank"]["latency"]
    assert set(rows) == {f"hybrid +rerank@4 w={w}" for w in (0.0, 0.25, 0.5, 0.75, 1.0)}
    assert rows["hybrid +rerank@4 w=0.0"]["ndcg@10"] == pytest.approx(ds["retrievers"]["hybrid"]["ndcg@10"])
    assert rows["hybrid +rerank@4 w=1.0"]["recall@100"] == pytest.approx(ds["retrievers"]["hybrid"]["recall@100"])
    assert lat["queries_timed"] == 12 and 0 < lat["model_ms_p50"] <= lat["model_ms_p95"]
    assert ds["retrievers"]["bm25"]["ndcg@10"] > 0.8  # the code words make every query easy for BM25
    assert ds["retrievers"]["bm25"]["recall@100"] == 1.0  # 48 docs < 100: everything is retrieved

    assert set(ds["indexes"]) == {"flat", "ivf", "hnsw", "ivfpq", "sq8", "numpy"}
    for kind, m in ds["indexes"].items():
        assert m["device"] in {"cpu", "gpu"} and m["size_bytes"] > 0 and m["build_s"] >= 0, kind
        assert 0 <= m["p50_ms"] <= m["p99_ms"] and m["batch_qps"] > 0 and m["latency_queries"] == 12, kind
        assert 0.0 <= m["recall@10_vs_flat"] <= 1.0 and 0.0 <= m["ndcg@10"] <= 1.0, kind
    assert ds["indexes"]["flat"]["recall@10_vs_flat"] == 1.0
    assert ds["indexes"]["numpy"]["ndcg@10"] == pytest.approx(ds["indexes"]["flat"]["ndcg@10"], abs=0.05)
    assert ds["indexes"]["flat"]["ndcg@10"] == pytest.approx(ds["retrievers"]["dense"]["ndcg@10"], abs=1e-6)

    build = ds["build"]
    assert build["bm25_s"] >= 0 and build["embedding"]["passages_per_s"] > 0 and build["index_device"] in {"cpu", "gpu"}
    machine = report["machine"]
    assert machine["cpu_count"] >= 1 and machine["faiss_version"] and isinstance(machine["gpu_used"], bool)
    printed = capsys.readouterr().out
    assert "nDCG@10" in printed and "ivfpq" in printed and "numpy" in printed


def test_missing_data_folder_exits_2_with_one_line(tmp_path, bench, capsys):
    rc = bench.main(["--data-dir", str(tmp_path / "nowhere"), "--embedder", "fake", "--out", str(tmp_path / "r.json")])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert "data folder not found" in err and "\n" not in err
    assert not (tmp_path / "r.json").exists()


def test_bm25_settings_rows_and_the_defaults_reproduce_the_main_rows(tmp_path, bench):
    beir_folder(tmp_path / "data" / "scifact")
    out = tmp_path / "res.json"
    rc = bench.main(["--data-dir", str(tmp_path / "data"), "--datasets", "scifact", "--embedder", "fake", "--out",
                     str(out), "--no-indexes", "--no-rerank", "--bm25", "1.5:0.75,0.9:0.4"])
    assert rc == 0
    ds = json.loads(out.read_text())["datasets"]["scifact"]
    rows = ds["bm25_settings"]
    modes = set(ds["retrievers"]) - {"dense"}
    assert set(rows) == {f"{m} [k1={k1} b={b}]" for m in modes for k1, b in ((1.5, 0.75), (0.9, 0.4))}
    for mode in modes:  # the index defaults rebuilt through --bm25 give exactly the main rows
        assert rows[f"{mode} [k1=1.5 b=0.75]"]["ndcg@10"] == pytest.approx(ds["retrievers"][mode]["ndcg@10"])
    assert rows["bm25 [k1=0.9 b=0.4]"]["bm25_k1"] == 0.9 and rows["bm25 [k1=0.9 b=0.4]"]["bm25_b"] == 0.4


def test_bm25_main_builds_the_main_rows_at_that_setting(tmp_path, bench):
    beir_folder(tmp_path / "data" / "scifact")
    out, ref = tmp_path / "main.json", tmp_path / "ref.json"
    common = ["--data-dir", str(tmp_path / "data"), "--datasets", "scifact", "--embedder", "fake", "--no-indexes",
              "--no-rerank"]
    assert bench.main([*common, "--out", str(ref), "--bm25", "0.9:0.4"]) == 0
    assert bench.main([*common, "--out", str(out), "--bm25-main", "0.9:0.4"]) == 0
    main, other = (json.loads(p.read_text()) for p in (out, ref))
    assert main["settings"]["bm25_main"] == [0.9, 0.4]
    for mode in set(main["datasets"]["scifact"]["retrievers"]) - {"dense"}:
        assert main["datasets"]["scifact"]["retrievers"][mode]["ndcg@10"] == pytest.approx(
            other["datasets"]["scifact"]["bm25_settings"][f"{mode} [k1=0.9 b=0.4]"]["ndcg@10"])


def test_bad_bm25_setting_is_a_usage_error(tmp_path, bench, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(["--data-dir", str(tmp_path), "--embedder", "fake", "--bm25", "0.9-0.4"])
    assert e.value.code == 2 and "--bm25" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        bench.main(["--data-dir", str(tmp_path), "--embedder", "fake", "--bm25-main", "0.9"])
    assert e.value.code == 2 and "--bm25-main" in capsys.readouterr().err


def test_embedder_folder_that_is_not_a_model_exits_2_with_one_line(tmp_path, bench, capsys):
    """--embedder takes a sentence-transformers folder too; a folder that holds no model is a usage error."""
    beir_folder(tmp_path / "data" / "scifact")
    rc = bench.main(["--data-dir", str(tmp_path / "data"), "--datasets", "scifact", "--embedder", str(tmp_path),
                     "--out", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "not a sentence-transformers model folder" in err, err


def test_chunk_size_is_the_index_chunking_and_is_recorded(tmp_path, bench, capsys):
    """--chunk-size N chunks the corpus at N tokens: smaller chunks give more of them, and the report says which."""
    beir_folder(tmp_path / "data" / "scifact")
    counts = {}
    for size in (16, 256):
        out = tmp_path / f"res{size}.json"
        rc = bench.main(["--data-dir", str(tmp_path / "data"), "--datasets", "scifact", "--embedder", "fake", "--out",
                         str(out), "--no-indexes", "--no-rerank", "--chunk-size", str(size), "--chunk-overlap", "0"])
        assert rc == 0
        report = json.loads(out.read_text())
        assert report["settings"]["chunking"] == {"chunk_size": size, "chunk_overlap": 0}
        counts[size] = report["datasets"]["scifact"]["n_chunks"]
    assert counts[16] > counts[256]
    with pytest.raises(SystemExit) as e:
        bench.main(["--data-dir", str(tmp_path), "--embedder", "fake", "--chunk-size", "8"])
    assert e.value.code == 2 and "--chunk-size" in capsys.readouterr().err
