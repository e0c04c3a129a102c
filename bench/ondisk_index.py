#!/usr/bin/env python
"""An in-memory IVF index vs the same index with its inverted lists on disk (rag/ondisk_index.py, faiss
OnDiskInvertedLists): build time, the process's memory after load, and query latency.

    python bench/ondisk_index.py [--n 200000] [--dim 384] [--nlist 256] [--nprobe 16] [--train 50000]
                                 [--shard 50000] [--rounds 2] [--out bench/results/ondisk_index.json]

Synthetic vectors (a seeded Gaussian mixture, L2-normalised; bench/faiss_gpu.mixture), so no model and no data. The
quantizer is trained once on a sample of --train vectors and shared by both builds, so the two indexes hold the same
lists: in memory (add, write) and on disk (each --shard vectors added to an empty clone and written, the lists merged
into one .ivfdata, the header written). Each index is then loaded in a fresh child process (memory is that process's
own), the children interleaved over --rounds so machine load affects both alike: load time; VmRSS, RssAnon and RssFile
after load and after the queries; single-query latency p50/p99 (200 queries) and batch queries/s (1,000 queries);
and whether their top-10 ids and scores equal. The on-disk index is measured twice, its lists file evicted from the
page cache first (posix_fadvise DONTNEED: cold reads from disk) and warm. Prints a table, writes JSON. Not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import faiss
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.faiss_gpu import mixture  # noqa: E402
from rag.offline import set_offline_env  # noqa: E402

set_offline_env()

from rag import faiss_index, ondisk_index  # noqa: E402
from rag.config import IndexConfig  # noqa: E402

K, LATENCY_QUERIES, BATCH_QUERIES = 10, 200, 1000
_T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def memory_mib() -> dict[str, float]:
    """VmRSS, RssAnon (heap) and RssFile (mapped file pages resident) of this process, MiB."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0]) / 1024
    return out


def vectors(args: argparse.Namespace, seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = np.random.default_rng(0).standard_normal((512, args.dim), dtype=np.float32)
    return mixture(n, args.dim, centers, rng)


def child(args: argparse.Namespace) -> int:
    """Load one index, measure, print one JSON line (ids and scores saved next to the index for the comparison)."""
    before = memory_mib()
    t = time.perf_counter()
    index = faiss_index.load(args.child, on_disk=args.on_disk)
    load_s = time.perf_counter() - t
    after_load = memory_mib()
    faiss.extract_index_ivf(index).nprobe = args.nprobe
    queries = vectors(args, 99, BATCH_QUERIES)
    single = []
    for q in queries[:LATENCY_QUERIES]:
        t = time.perf_counter()
        index.search(q[None, :], K)
        single.append(time.perf_counter() - t)
    t = time.perf_counter()
    scores, ids = index.search(queries, K)
    batch_s = time.perf_counter() - t
    np.savez(args.child + f".{'disk' if args.on_disk else 'mem'}.npz", ids=ids, scores=scores)
    print(json.dumps({"load_s": load_s, "rss_before_mib": before, "rss_after_load_mib": after_load,
                      "rss_after_queries_mib": memory_mib(), "p50_ms": 1000 * float(np.percentile(single, 50)),
                      "p99_ms": 1000 * float(np.percentile(single, 99)), "batch_qps": BATCH_QUERIES / batch_s,
                      "on_disk_lists": ondisk_index.on_disk_lists(index) is not None}))
    return 0


def evict(path: Path) -> None:
    """Drop ``path``'s clean pages from the page cache (no root needed), so the next reads go to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def measure(path: Path, on_disk: bool, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--child", str(path), "--nprobe", str(args.nprobe), "--dim", str(args.dim)]
    run = subprocess.run(cmd + (["--on-disk"] if on_disk else []), capture_output=True, text=True, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--nlist", type=int, default=256)
    ap.add_argument("--nprobe", type=int, default=16)
    ap.add_argument("--train", type=int, default=50_000)
    ap.add_argument("--shard", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "ondisk_index.json"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--on-disk", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)

    load_start = os.getloadavg()
    cfg = IndexConfig(kind="ivf", nlist=args.nlist, nprobe=args.nprobe, on_disk=True)
    x = vectors(args, 1, args.n)
    log(f"{args.n:,} x {args.dim} vectors ({x.nbytes / 2**20:.0f} MiB)")
    work = Path(tempfile.mkdtemp(prefix="ondisk-bench-"))
    try:
        t = time.perf_counter()
        trained = ondisk_index.empty_trained(x[np.random.default_rng(2).choice(args.n, args.train, replace=False)],
                                             cfg, args.n)
        train_s = time.perf_counter() - t
        log(f"trained {faiss_index.factory_string(cfg, args.n, args.dim)} on {args.train:,} vectors: {train_s:.1f}s")
        (work / "mem").mkdir()
        (work / "disk").mkdir()
        t = time.perf_counter()
        memory = faiss.clone_index(trained)
        memory.add(x)
        faiss_index.save(memory, work / "mem" / "dense.faiss")
        mem_build_s = time.perf_counter() - t
        del memory
        t = time.perf_counter()
        writer = ondisk_index.ShardWriter(trained, work / "disk")
        for s in range(0, args.n, args.shard):
            writer.add(x[s : s + args.shard])
        disk = writer.finish()
        faiss_index.save(disk, work / "disk" / "dense.faiss")
        del disk
        disk_build_s = time.perf_counter() - t
        log(f"built: in memory {mem_build_s:.1f}s, on disk {disk_build_s:.1f}s")
        del x
        sizes = {name: {p.name: p.stat().st_size for p in (work / name).iterdir()} for name in ("mem", "disk")}

        runs: dict[str, list[dict]] = {"in memory": [], "on disk, cold cache": [], "on disk, warm cache": []}
        for r in range(args.rounds):
            runs["in memory"].append(measure(work / "mem" / "dense.faiss", False, args))
            evict(work / "disk" / ondisk_index.IVFDATA)
            runs["on disk, cold cache"].append(measure(work / "disk" / "dense.faiss", True, args))
            runs["on disk, warm cache"].append(measure(work / "disk" / "dense.faiss", True, args))
            log(f"round {r + 1}/{args.rounds} measured")
        a = np.load(str(work / "mem" / "dense.faiss") + ".mem.npz")
        b = np.load(str(work / "disk" / "dense.faiss") + ".disk.npz")
        equal = bool(np.array_equal(a["ids"], b["ids"]) and np.array_equal(a["scores"], b["scores"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def med(rows: list[dict], key: str, sub: str | None = None) -> float:
        return float(np.median([row[key][sub] if sub else row[key] for row in rows]))

    table = []
    for name, rows in runs.items():
        table.append({"index": name, "build_s": mem_build_s if name == "in memory" else disk_build_s,
                      "load_s": med(rows, "load_s"),
                      "rss_load_mib": med(rows, "rss_after_load_mib", "VmRSS"),
                      "anon_load_mib": med(rows, "rss_after_load_mib", "RssAnon"),
                      "rss_query_mib": med(rows, "rss_after_queries_mib", "VmRSS"),
                      "file_query_mib": med(rows, "rss_after_queries_mib", "RssFile"),
                      "p50_ms": med(rows, "p50_ms"), "p99_ms": med(rows, "p99_ms"), "qps": med(rows, "batch_qps"),
                      "on_disk_lists": all(row["on_disk_lists"] for row in rows)})
    base = runs["in memory"][0]["rss_before_mib"]["VmRSS"]
    print(f"\n{args.n:,} x {args.dim}-d, IVF{args.nlist},Flat, nprobe {args.nprobe}; quantizer trained once on "
          f"{args.train:,} ({train_s:.1f}s, shared); median of {args.rounds} rounds; python+faiss before load "
          f"{base:.0f} MiB; top-10 ids and scores equal: {equal}")
    print(f"{'index':<20} {'build s':>8} {'load s':>7} {'RSS MiB':>8} {'anon':>6} {'RSS q':>7} {'file q':>7} "
          f"{'p50 ms':>7} {'p99 ms':>7} {'q/s':>7}")
    for row in table:
        print(f"{row['index']:<20} {row['build_s']:>8.1f} {row['load_s']:>7.2f} {row['rss_load_mib']:>8.0f} "
              f"{row['anon_load_mib']:>6.0f} {row['rss_query_mib']:>7.0f} {row['file_query_mib']:>7.0f} "
              f"{row['p50_ms']:>7.2f} {row['p99_ms']:>7.2f} {row['qps']:>7.0f}")
    print("RSS: after load; anon: its heap part; RSS q / file q: after the queries, and the mapped file pages in it")
    out = {"at": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.machine(),
           "cpus": os.cpu_count(), "loadavg_start": load_start, "loadavg_end": os.getloadavg(),
           "faiss": faiss.__version__, "args": {k: v for k, v in vars(args).items() if k not in ("child", "on_disk")},
           "train_s": train_s, "files_bytes": sizes, "results_equal": equal, "rows": table, "runs": runs}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
