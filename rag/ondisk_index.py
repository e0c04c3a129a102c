"""An IVF index whose inverted lists live on disk (``index.on_disk``, ``ragdoctor index --on-disk``), for corpora
whose vectors do not fit in memory. faiss's own mechanism (faiss.contrib.ondisk, the faiss wiki's "Indexes that do not
fit in RAM"): the coarse quantizer is trained once, each shard of vectors is added to an empty clone of the trained
index and written to its own file, and the shards' inverted lists are merged into one ``OnDiskInvertedLists`` file,
``dense.ivfdata``, beside the index header ``dense.faiss``; the shard files are then removed. On load the lists are
mmapped read-only (``IO_FLAG_ONDISK_SAME_DIR``: the data file is looked up beside the header, so the folder can be
moved), so only the pages a search touches are read. Ids are corpus positions, and the lists hold the vectors in the
order a one-shot ``add`` would, so searches equal the in-memory index built from the same trained quantizer."""
from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from rag.config import IndexConfig

IVFDATA = "dense.ivfdata"  # beside dense.faiss
SHARD_SIZE = 65_536  # vectors per shard file when every vector is already in memory (the local engine)
ON_DISK_KINDS = ("ivf", "ivfpq")

log = logging.getLogger("ragdoctor")


def on_disk_refusal(kind: str, refine: str = "none") -> str | None:
    """Why an index of ``kind`` cannot keep its data on disk, or None when it can."""
    if kind == "flat":
        return ("on_disk needs kind ivf or ivfpq: a flat index has no inverted lists to keep on disk (faiss's on-disk "
                "storage holds IVF lists)")
    if kind == "hnsw":
        return ("on_disk needs kind ivf or ivfpq: an HNSW index's graph and vectors live in memory (faiss has no "
                "on-disk HNSW)")
    if kind == "sq8":
        return ("on_disk needs kind ivf or ivfpq: a flat SQ8 index has no inverted lists to keep on disk (faiss's "
                "on-disk storage holds IVF lists)")
    if kind == "ivfpq" and refine != "none":
        return (f"on_disk: IVF-PQ with refine '{refine}' re-ranks with a second copy of every vector kept in memory; "
                "set index.refine = 'none' (RAGDOCTOR_INDEX__REFINE=none) for an on-disk IVF-PQ")
    return None


@contextlib.contextmanager
def _quiet_c_stdout() -> Iterator[None]:
    """faiss's on-disk code prints ("resizing ...", "IO_FLAG_ONDISK_SAME_DIR: updating ...") on the C stdout, which
    would corrupt a command's own output (``ask --json``): file descriptor 1 goes to a temporary file for the call and
    what faiss said is logged at debug level. (Another thread's C-level writes to fd 1 in that window go there too.)"""
    libc = ctypes.CDLL(None)
    with contextlib.suppress(AttributeError, OSError, ValueError):  # a replaced or closed sys.stdout
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no file descriptor 1 (a daemon): nothing to protect
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        try:
            yield
        finally:
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            said = sink.read().decode("utf-8", "replace").strip()
            if said:
                log.debug("faiss: %s", said.replace("\n", "; "))


def empty_trained(train: np.ndarray, cfg: IndexConfig, n: int):
    """An empty IVF index of ``cfg``'s kind for a corpus of ``n`` vectors, its quantizer trained on ``train``."""
    import faiss  # noqa: PLC0415 - loaded with rag.faiss_index anyway

    from rag import faiss_index  # noqa: PLC0415 - rag.config imports this module's refusal; keep the cycle lazy

    train = np.ascontiguousarray(train, dtype=np.float32)
    dim = int(train.shape[1])
    index = faiss.index_factory(dim, faiss_index.factory_string(cfg, n, dim), faiss.METRIC_INNER_PRODUCT)
    faiss.extract_index_ivf(index)  # raises for a kind without inverted lists (refused earlier; never silently)
    if not index.is_trained:
        faiss_index.quiet_training(index, cfg, n)
        index.train(train)
    return index


class ShardWriter:
    """Adds shards of vectors (ids: their corpus positions) to empty clones of ``trained``, each clone written to its
    own file under ``folder/shards``; :meth:`finish` merges their inverted lists into ``folder/dense.ivfdata`` and
    returns the populated index (its lists on disk), the shard files removed."""

    def __init__(self, trained, folder: Path):
        import faiss  # noqa: PLC0415

        self.faiss = faiss
        self.trained = trained
        self.folder = Path(folder)
        self.work = self.folder / "shards"
        self.work.mkdir(parents=True, exist_ok=False)
        self.files: list[str] = []
        self.ntotal = 0

    def add(self, vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if not len(vectors):
            return
        shard = self.faiss.clone_index(self.trained)
        ids = np.arange(self.ntotal, self.ntotal + len(vectors), dtype=np.int64)
        shard.add_with_ids(vectors, ids)
        path = self.work / f"shard-{len(self.files):05d}.faiss"
        self.faiss.write_index(shard, str(path))
        del shard
        self.files.append(str(path))
        self.ntotal += len(vectors)

    def finish(self):
        from faiss.contrib.ondisk import merge_ondisk  # noqa: PLC0415

        index = self.faiss.clone_index(self.trained)
        with _quiet_c_stdout():
            merge_ondisk(index, self.files, str(self.folder / IVFDATA))
        shutil.rmtree(self.work)
        if index.ntotal != self.ntotal:
            raise RuntimeError(f"merged {index.ntotal} vectors into {IVFDATA}, {self.ntotal} were added")
        return index


def build(vectors: np.ndarray, cfg: IndexConfig, folder: Path, *, shard_size: int = SHARD_SIZE,
          ids: list[str] | None = None):
    """:func:`rag.faiss_index.build` with the lists on disk in ``folder``: trained on every vector (so the quantizer
    is the in-memory build's), then filled shard by shard; NaN or inf vectors warned about as there."""
    from rag.faiss_index import warn_non_finite  # noqa: PLC0415 - lazy, as faiss is here

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    warn_non_finite(vectors, ids)
    writer = ShardWriter(empty_trained(vectors, cfg, len(vectors)), folder)
    for start in range(0, len(vectors), shard_size):
        writer.add(vectors[start : start + shard_size])
    return writer.finish()


def load(path: str | Path):
    """The index at ``path`` with its inverted lists mmapped read-only from the ``dense.ivfdata`` beside it."""
    import faiss  # noqa: PLC0415

    with _quiet_c_stdout():
        return faiss.read_index(str(path), faiss.IO_FLAG_ONDISK_SAME_DIR | faiss.IO_FLAG_READ_ONLY)


def on_disk_lists(index):
    """The index's OnDiskInvertedLists, or None when its lists are in memory (or it has none)."""
    import faiss  # noqa: PLC0415

    try:
        lists = faiss.downcast_InvertedLists(faiss.extract_index_ivf(index).invlists)
    except (RuntimeError, AttributeError):
        return None
    return lists if isinstance(lists, faiss.OnDiskInvertedLists) else None
