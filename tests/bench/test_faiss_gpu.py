"""bench/faiss_gpu.py plumbing on the CPU (no GPU here): every kind is built, timed and measured against exact search,
and the JSON says where each index searched."""
import json

from tests.bench import load_bench


def test_faiss_bench_runs_on_the_cpu_and_writes_json(tmp_path, capsys):
    bench = load_bench("faiss_gpu")
    out = tmp_path / "f.json"
    assert bench.main(["--n", "3000", "--dim", "32", "--queries", "40", "--kinds", "flat,ivf,hnsw",
                       "--nlist", "16", "--nprobe", "16", "--out", str(out)]) == 0
    body = json.loads(out.read_text())
    rows = {r["kind"]: r for r in body["rows"]}
    assert set(rows) == {"flat", "ivf", "hnsw"} and body["gpus"] == 0
    assert all(r["device"] == "cpu" and "gpu" not in r and r["fallback_reason"] is None for r in rows.values())
    assert rows["flat"]["cpu"]["recall@10"] == 1.0 and rows["ivf"]["cpu"]["recall@10"] == 1.0  # nprobe = nlist
    assert rows["flat"]["factory"] == "Flat" and rows["ivf"]["factory"] == "IVF16,Flat"
    assert "flat | cpu" in capsys.readouterr().out
