#!/usr/bin/env python
"""faiss on the CPU vs the GPU, through ragdoctor's own index code (rag/faiss_index.py): does each index kind reach the
GPU, does the GPU copy return what the CPU index returns, and how fast is each.

    python bench/faiss_gpu.py [--n 200000] [--dim 384] [--queries 2000] [--kinds flat,ivf,ivfpq,sq8,hnsw]
                              [--nlist 1024] [--nprobe 32] [--out bench/results/faiss_gpu.json]

Synthetic vectors (a seeded Gaussian mixture, L2-normalised, like sentence embeddings), so it needs no model and no
data files. Per kind: CPU build time; for the CPU index and, where rag.faiss_index.to_device places it, the GPU copy:
batch throughput (queries/s over --queries), single-query latency p50/p99 (200 queries), recall@10 against exact
search, and for the GPU copy its top-10 agreement with the CPU index. Where the GPU copy is refused or unusable,
the reason to_device logged is recorded instead. On a machine without a GPU only the CPU rows are filled.
Prints a table and writes every number to JSON. Not a timed test.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import faiss
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rag import faiss_index  # noqa: E402
from rag.config import IndexConfig  # noqa: E402

K = 10
LATENCY_QUERIES = 200
_T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def mixture(n: int, dim: int, centers: np.ndarray, rng: np.random.Generator, chunk: int = 100_000) -> np.ndarray:
    out = np.empty((n, dim), dtype=np.float32)
    for s in range(0, n, chunk):
        m = min(chunk, n - s)
        x = centers[rng.integers(0, len(centers), m)] + 0.35 * rng.standard_normal((m, dim), dtype=np.float32)
        out[s:s + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f[f >= 0]) & set(t)) / len(t) for f, t in zip(found, truth)]))


def time_index(index, queries: np.ndarray, truth: np.ndarray) -> dict:
    index.search(queries[:8], K)  # warm-up (GPU: kernel loading, scratch allocation)
    t = time.perf_counter()
    _, ids = index.search(queries, K)
    batch_s = time.perf_counter() - t
    lat = []
    for q in queries[:LATENCY_QUERIES]:
        t = time.perf_counter()
        index.search(q[None, :], K)
        lat.append((time.perf_counter() - t) * 1000)
    return {"qps": round(len(queries) / batch_s, 1), "batch_s": round(batch_s, 4),
            "p50_ms": round(float(np.percentile(lat, 50)), 3), "p99_ms": round(float(np.percentile(lat, 99)), 3),
            "recall@10": round(recall(ids, truth), 4), "ids": ids}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--kinds", default="flat,ivf,ivfpq,sq8,hnsw")
    ap.add_argument("--nlist", type=int, default=1024)
    ap.add_argument("--nprobe", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "faiss_gpu.json"))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    centers = rng.standard_normal((max(16, args.n // 200), args.dim), dtype=np.float32)
    xb, xq = mixture(args.n, args.dim, centers, rng), mixture(args.queries, args.dim, centers, rng)
    gpus = faiss_index.gpu_count()
    log(f"faiss {faiss.__version__}, GPUs seen: {gpus}, OpenMP threads: {faiss.omp_get_max_threads()}; "
        f"{args.n} x {args.dim} vectors, {args.queries} queries")
    exact = faiss.IndexFlatIP(args.dim)
    exact.add(xb)
    _, truth = exact.search(xq, K)

    rows = []
    for kind in [k.strip() for k in args.kinds.split(",") if k.strip()]:
        cfg = IndexConfig(kind=kind, nlist=args.nlist, nprobe=args.nprobe)
        t = time.perf_counter()
        cpu = faiss_index.build(xb, cfg)
        faiss_index.tune(cpu, cfg)
        row = {"kind": kind, "factory": faiss_index.factory_string(cfg, args.n, args.dim),
               "cpu_build_s": round(time.perf_counter() - t, 2)}
        c = time_index(cpu, xq, truth)
        row["cpu"] = {k: v for k, v in c.items() if k != "ids"}
        log(f"{kind}: cpu {row['cpu']}")
        said: list[str] = []
        t = time.perf_counter()
        placed, device = faiss_index.to_device(cpu, cfg, log=said.append)
        row["gpu_place_s"] = round(time.perf_counter() - t, 3)
        row["device"], row["fallback_reason"] = device, (said[0] if said else None)
        if device == "gpu":
            faiss_index.tune(placed, cfg)
            g = time_index(placed, xq, truth)
            row["gpu"] = {k: v for k, v in g.items() if k != "ids"}
            row["gpu_agrees_with_cpu@10"] = round(recall(g["ids"], c["ids"]), 4)
            row["gpu_speedup_batch"] = round(row["gpu"]["qps"] / row["cpu"]["qps"], 1)
            log(f"{kind}: gpu {row['gpu']} agreement {row['gpu_agrees_with_cpu@10']}")
        else:
            log(f"{kind}: stays on the CPU" + (f" ({said[0]})" if said else ""))
        rows.append(row)
        del cpu, placed

    header = ["kind", "device", "build s", "cpu q/s", "cpu p50 ms", "cpu R@10", "gpu q/s", "gpu p50 ms", "gpu p99 ms",
              "gpu R@10", "gpu=cpu@10", "speed-up"]
    print(" | ".join(header))
    for r in rows:
        g = r.get("gpu", {})
        cells = [r["kind"], r["device"], r["cpu_build_s"], r["cpu"]["qps"], r["cpu"]["p50_ms"], r["cpu"]["recall@10"],
                 g.get("qps", "-"), g.get("p50_ms", "-"), g.get("p99_ms", "-"), g.get("recall@10", "-"),
                 r.get("gpu_agrees_with_cpu@10", "-"), r.get("gpu_speedup_batch", "-")]
        print(" | ".join(str(c) for c in cells))
        if r["fallback_reason"]:
            print(f"  {r['kind']}: {r['fallback_reason']}")
    if not gpus:
        print("gpu columns: unmeasured (faiss sees no GPU here: a CPU-only faiss build or no CUDA device)")
    out = {"when": datetime.now(UTC).isoformat(timespec="seconds"), "faiss": faiss.__version__,
           "gpus": gpus, "omp_threads": faiss.omp_get_max_threads(), "cpu_count": os.cpu_count(),
           "machine": platform.machine(), "args": vars(args), "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
