"""faiss index construction by kind (flat, IVF, HNSW, IVF-PQ, SQ8), GPU placement when faiss reports a GPU,
and save/load of CPU index files (a GPU index is copied back to the CPU before writing, so files are portable)."""
from __future__ import annotations

import functools
import math
import subprocess
import sys
from pathlib import Path

import faiss
import numpy as np

from corpora.errors import warn
from corpora.paths import utf8_name
from rag.config import IndexConfig


def gpu_count() -> int:
    get = getattr(faiss, "get_num_gpus", None)
    return int(get()) if get else 0


def trainable_nlist(nlist: int, n: int) -> int:
    """The inverted lists an IVF index over ``n`` vectors is built with: ``nlist`` at most, and at least 39 training
    points per centroid (what faiss wants)."""
    return max(1, min(nlist, n // 39 or 1))


def factory_string(cfg: IndexConfig, n: int, dim: int) -> str:
    """The faiss factory string for ``cfg``, with list counts and code sizes fitted to a corpus of ``n`` vectors."""
    nlist = trainable_nlist(cfg.nlist, n)
    if cfg.kind == "flat":
        return "Flat"
    if cfg.kind == "ivf":
        return f"IVF{nlist},Flat"
    if cfg.kind == "hnsw":
        return f"HNSW{cfg.hnsw_m}"
    if cfg.kind == "sq8":
        return "SQ8"
    if cfg.kind == "ivfpq":
        if n < 2:  # PQ codes of even 1 bit are 2 centroids per sub-vector: one vector cannot train them (faiss raises)
            return f"IVF{nlist},Flat"
        m = next(m for m in (dim // 8, dim // 12, dim // 16, dim // 4, dim // 2, 1) if m and dim % m == 0)
        bits = max(1, min(cfg.pq_bits, int(math.log2(max(2, n))) - 1))
        refine = {"none": "", "sq8": ",Refine(SQ8)", "flat": ",RFlat"}[cfg.refine]
        return f"IVF{nlist},PQ{m}x{bits}np{refine}"  # np: skip polysemous training (minutes, unused here)
    raise ValueError(f"unknown index kind {cfg.kind!r}")


def small_corpus_note(cfg: IndexConfig, n: int) -> str | None:
    """One line when an IVF kind over ``n`` vectors is an exhaustive search (fewer vectors than two lists train: one
    list, which every query scans, as flat does) or, for IVF-PQ over one vector, has no codes to learn; else None."""
    if cfg.kind not in ("ivf", "ivfpq") or trainable_nlist(cfg.nlist, n) > 1:
        return None
    if cfg.kind == "ivfpq" and n < 2:
        return (f"index kind 'ivfpq' over {n} vector: too few to train product-quantization codes; built "
                f"{factory_string(cfg, n, 1)} (exact search, as flat)")
    if cfg.nlist == 1:
        return None  # one list is what was asked
    exact = ", as flat does" if cfg.kind == "ivf" else ""  # IVF-PQ still compares codes, not the vectors
    return (f"index kind '{cfg.kind}' over {n} vectors: 1 inverted list instead of nlist={cfg.nlist} (faiss trains at "
            f"least 39 vectors per list), so every query scans every vector{exact}")


def quiet_training(index, cfg: IndexConfig, n: int) -> None:
    """Where :func:`small_corpus_note` speaks, say it once instead of faiss's k-means warning on stderr (one line per
    k-means run: 33 for IVF-PQ, none of them ragdoctor's)."""
    note = small_corpus_note(cfg, n)
    if note is None:
        return
    warn(note)
    ivf = faiss.extract_index_ivf(index)
    ivf.cp.min_points_per_centroid = 1  # the threshold only decides faiss's warning; training is unchanged
    pq = getattr(faiss.downcast_index(ivf), "pq", None)  # IVF-PQ's sub-quantizers: one k-means each
    if pq is not None:
        pq.cp.min_points_per_centroid = 1


def warn_non_finite(vectors: np.ndarray, ids: list[str] | None = None) -> int:
    """How many of ``vectors`` hold a NaN or an infinity; warned about once, naming the first by ``ids`` (else by
    row): their chunks score NaN against every query, so no search ever returns them. The build goes on."""
    if np.isfinite(vectors.sum(dtype=np.float64)):  # one pass, no per-row mask: the common case
        return 0
    bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
    if len(bad):
        first = [repr(ids[i]) if ids is not None and i < len(ids) else f"row {i}" for i in bad[:3]]
        warn(f"{len(bad)} of {len(vectors)} chunk vectors hold NaN or inf ({', '.join(first)}"
             f"{', ...' if len(bad) > 3 else ''}): no search can find those chunks (they stay in the index; an "
             "embedder or backend that gives NaN is broken: check its output)")
    return len(bad)


def build(vectors: np.ndarray, cfg: IndexConfig, ids: list[str] | None = None):
    """A trained CPU index holding ``vectors`` (inner product on normalised vectors = cosine); vectors holding NaN or
    inf are warned about (by ``ids`` when given) and kept."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    warn_non_finite(vectors, ids)
    n, dim = vectors.shape
    index = faiss.index_factory(dim, factory_string(cfg, n, dim), faiss.METRIC_INNER_PRODUCT)
    if not index.is_trained:
        quiet_training(index, cfg, n)
        index.train(vectors)
    index.add(vectors)
    return index


MIN_NPROBE, NPROBE_SHARE = 8, 4  # probe at least 8 lists, and at least 1/4 of them


def default_nprobe(nlist: int) -> int:
    """The lists an IVF search probes when ``nprobe`` is not set: max(8, ceil(nlist / 4)), capped at nlist.

    A query costs about nlist centroid comparisons plus nprobe * n / nlist vector comparisons (the faiss wiki's
    cell-probe cost model), so probing a fixed share of the lists keeps the scanned share of the corpus fixed however
    the list count grows (1/4: about 4x fewer comparisons than flat). A fixed nprobe (8) scans an ever smaller share
    as nlist grows, which is what lost recall (8 of 95 lists on SciFact train: recall@10 0.87 against flat, nDCG@10
    0.602 vs 0.670; a 1/8 share measured 0.91 recall@10, under the 0.95 target; 1/4 measured 0.97)."""
    return max(1, min(nlist, max(MIN_NPROBE, math.ceil(nlist / NPROBE_SHARE))))


def nprobe_for(cfg: IndexConfig, nlist: int) -> int:
    """``cfg.nprobe`` when set (capped at nlist), else :func:`default_nprobe`."""
    return min(cfg.nprobe, nlist) if cfg.nprobe is not None else default_nprobe(nlist)


def tune(index, cfg: IndexConfig) -> None:
    """Apply search-time parameters (nprobe, efSearch, the refine k_factor) to a CPU or GPU index."""
    try:
        ivf = faiss.extract_index_ivf(index)
        ivf.nprobe = nprobe_for(cfg, ivf.nlist)
    except (RuntimeError, AttributeError):
        pass
    hnsw = getattr(index, "hnsw", None)
    if hnsw is not None:
        hnsw.efSearch = cfg.ef_search
    if hasattr(index, "k_factor") and hasattr(index, "refine_index"):  # IndexRefine / IndexRefineFlat
        index.k_factor = float(cfg.refine_k_factor)


GPU_KINDS = frozenset({"flat", "ivf", "ivfpq"})  # faiss has GPU versions of these; HNSW and flat SQ8 stay on the CPU


_GPU_PROBE = """
import sys, numpy as np, faiss
index = faiss.GpuIndexFlatIP(faiss.StandardGpuResources(), 8)
x = np.eye(8, dtype="float32")
index.add(x)
_, ids = index.search(x[:2], 1)
sys.exit(0 if ids[:, 0].tolist() == [0, 1] else 3)
"""


def probe_reason(returncode: int, stderr: str) -> str:
    """One line saying why the GPU probe failed, from its exit status and stderr."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    cuda = [ln for ln in lines if "CUDA error" in ln or "details:" in ln]
    line = (cuda or lines or [""])[-1]
    if "details:" in line:
        line = line.split("details:", 1)[1].strip()
    how = f"killed by signal {-returncode}" if returncode < 0 else f"exit status {returncode}"
    return f"faiss GPU probe failed ({how}){': ' + line[:240] if line else ''}"


@functools.lru_cache(maxsize=1)
def gpu_usable(timeout_s: float = 600) -> tuple[bool, str]:
    """(True, "") when faiss's GPU kernels run on GPU 0, else (False, reason). Tried once per process, in a child
    process: a faiss build without kernels for this chip aborts the whole process (a FAISS_ASSERT on CUDA error 209,
    measured with the PyPI faiss-gpu-cu12 1.14.1 wheel on an H200), which no except clause can catch. The timeout
    leaves room for a driver compiling PTX on first use."""
    try:
        run = subprocess.run([sys.executable, "-c", _GPU_PROBE], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False, f"faiss GPU probe did not finish in {timeout_s:.0f} s"
    return (True, "") if run.returncode == 0 else (False, probe_reason(run.returncode, run.stderr))


def to_device(index, cfg: IndexConfig, log=None):
    """Move to GPU 0 when faiss sees one, its kernels run there and the kind has a GPU version; otherwise return the CPU
    index unchanged. Returns (index, "gpu" | "cpu"); when a GPU is seen but not used, ``log`` (if given) gets the
    reason in one line: a faiss build without kernels for this chip (the PyPI faiss-gpu-cu12 wheels carry sm_70 and
    sm_80 code only, so on a Hopper H100/H200 every GPU call fails; see gpu_usable) or a layout faiss cannot copy to
    the GPU (an IVF-PQ code size its kernels lack)."""
    if cfg.use_gpu == "never" or cfg.kind not in GPU_KINDS or gpu_count() == 0:
        return index, "cpu"
    if cfg.on_disk:  # a GPU copy would read every list into GPU memory: the point of on-disk lists is not to
        if log:
            log("the index's inverted lists are on disk (mmapped): searching on the CPU")
        return index, "cpu"
    usable, why = gpu_usable()
    if not usable:
        if log:
            log(f"faiss sees a GPU but cannot use it, searching on the CPU: {why}")
        return index, "cpu"
    try:
        res = _gpu_resources()
        co = faiss.GpuClonerOptions()
        co.useFloat16 = False
        co.useFloat16LookupTables = True  # type: ignore[attr-defined]  # IVF-PQ: fp16 tables in shared memory
        gpu_index = faiss.index_cpu_to_gpu(res, 0, index, co)
    except (RuntimeError, MemoryError) as exc:  # faiss raises RuntimeError for layouts its GPU code lacks
        if log:
            reason = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
            log(f"faiss could not copy the {cfg.kind} index to the GPU, searching on the CPU: {reason[:240]}")
        return index, "cpu"
    return gpu_index, "gpu"


@functools.lru_cache(maxsize=1)
def _gpu_resources():
    """One StandardGpuResources per process, alive as long as the process: a GPU index must not outlive its resources,
    and faiss >= 1.15 refuses new attributes on its SWIG objects, so the index cannot hold them itself."""
    return faiss.StandardGpuResources()


def save(index, path: str | Path) -> None:
    """Write the CPU copy of ``index`` to ``path``. faiss takes a file name only as UTF-8 text: a path with bytes that
    are not (a folder name from a shell) is written through a Python file handle instead."""
    if "Gpu" in type(index).__name__:
        index = faiss.index_gpu_to_cpu(index)
    if utf8_name(path):
        faiss.write_index(index, str(path))
        return
    with open(path, "wb") as fh:
        faiss.write_index(index, faiss.PyCallbackIOWriter(fh.write))  # type: ignore[attr-defined]


def load(path: str | Path, *, on_disk: bool = False):
    """The index at ``path``; ``on_disk``: its inverted lists mmapped from the file beside it (rag/ondisk_index.py).
    A path that is not UTF-8 text is read through a Python file handle (see ``save``)."""
    if on_disk:
        from rag.index_dir import check_index_name  # noqa: PLC0415
        from rag.ondisk_index import load as load_on_disk  # noqa: PLC0415

        check_index_name(Path(path).parent, on_disk=True)
        return load_on_disk(path)
    if utf8_name(path):
        return faiss.read_index(str(path))
    with open(path, "rb") as fh:
        return faiss.read_index(faiss.PyCallbackIOReader(fh.read))  # type: ignore[attr-defined]


def search(index, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(scores, positions) for a batch of queries, best first; positions are -1 where fewer than k results exist.
    Equal scores come in corpus order, the earlier chunk first, at the cut too: faiss gives tied chunks (one text in
    two documents) in reverse order and, on a GPU or through HNSW's graph, may keep a later one over an earlier one
    at the k-th place. So one more result than k is asked for, and more while the last one asked for ties the k-th."""
    k = max(1, min(k, index.ntotal))
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    most = max(k, _most_results(index))
    wide = min(k + 1, most)
    while True:
        scores, positions = index.search(queries, wide)
        if wide >= most or not _tied_past(scores, positions, k):
            return _in_corpus_order(scores, positions, k)
        wide = min(2 * wide, most)


GPU_MAX_K = 2048  # the most results faiss's GPU k-selection gives (GPU_MAX_SELECTION_K); more is a RuntimeError


def _most_results(index) -> int:
    """How many results one search of ``index`` may ask for: every vector, from a GPU index GPU_MAX_K at most (a cut
    is not widened past that: a top_k of 2048 searches as before)."""
    return min(index.ntotal, GPU_MAX_K) if "Gpu" in type(index).__name__ else index.ntotal


def _tied_past(scores: np.ndarray, positions: np.ndarray, k: int) -> bool:
    """Whether a row's last result ties its k-th: chunks of that score may be left out past it."""
    return bool(np.any((positions[:, -1] >= 0) & (scores[:, -1] == scores[:, k - 1])))


def _in_corpus_order(scores: np.ndarray, positions: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's first ``k`` by score, equal scores by position (a missing result, -1, last)."""
    key = np.where(positions < 0, np.iinfo(np.int64).max, positions)
    order = np.lexsort((key, -scores), axis=-1)
    return np.take_along_axis(scores, order, -1)[:, :k], np.take_along_axis(positions, order, -1)[:, :k]


class InCorpusOrder:
    """A faiss index whose ``search`` is :func:`search` (equal scores in corpus order): what llama-index's
    FaissVectorStore is handed, so the single-query path ranks ties as the batch path does."""

    def __init__(self, index):
        self.index = index

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return search(self.index, queries, k)

    def __getattr__(self, name: str):
        return getattr(self.index, name)
