"""faiss index files (rag/faiss_index.py) under a path that is not UTF-8 text (bytes from a shell): faiss's own
file-name API takes UTF-8 only, so such a file is written and read through a Python file handle."""
import numpy as np
import pytest

from corpora.errors import InputError
from rag import faiss_index
from rag.config import IndexConfig


def test_an_index_file_under_a_name_that_is_not_utf8_is_saved_and_loaded(tmp_path):
    folder = tmp_path / "idx\udcff"
    folder.mkdir()
    vectors = np.random.default_rng(0).random((20, 8), dtype=np.float32)
    index = faiss_index.build(vectors, IndexConfig(kind="flat"))
    faiss_index.save(index, folder / "dense.faiss")
    loaded = faiss_index.load(folder / "dense.faiss")
    assert loaded.ntotal == 20 and loaded.d == 8
    assert np.allclose(loaded.reconstruct_n(0, 20), index.reconstruct_n(0, 20))
    faiss_index.save(index, tmp_path / "plain.faiss")  # a UTF-8 name: faiss's own file API, as before
    assert faiss_index.load(tmp_path / "plain.faiss").ntotal == 20


def test_an_on_disk_index_under_a_name_that_is_not_utf8_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="not UTF-8 text"):
        faiss_index.load(tmp_path / "idx\udcff" / "dense.faiss", on_disk=True)


def _copies(n: int = 40, dim: int = 16) -> np.ndarray:
    """Unit vectors where rows 5, 17 and 29 are one vector (one chunk's text in three documents)."""
    x = np.random.default_rng(0).standard_normal((n, dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x[17] = x[29] = x[5]
    return x


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf", "ivfpq", "sq8"])
def test_equal_scores_come_in_corpus_order_at_every_k(kind):
    """faiss gave the three copies as 29, 17, 5: the last copy first."""
    x = _copies()
    index = faiss_index.build(x, IndexConfig(kind=kind, nlist=1, refine="none"))
    for k in (1, 2, 3):
        scores, positions = faiss_index.search(index, x[[5, 0]], k)
        assert positions[0].tolist() == [5, 17, 29][:k] and positions.shape == scores.shape == (2, k)
    scores, positions = faiss_index.search(index, x[[5]], 5)
    assert positions[0, :3].tolist() == [5, 17, 29] and scores[0, 2] > scores[0, 3] >= scores[0, 4]


class _LaterFirst:
    """An index ranking equal scores latest first, as a GPU's k-selection may: a cut keeps the later copies."""

    def __init__(self, x: np.ndarray, found: int | None = None):
        self.x, self.ntotal, self.found = x, len(x), found  # found: results it has at most (the rest: -1)

    def search(self, queries, k):
        scores = queries @ self.x.T
        later = np.broadcast_to(-np.arange(self.ntotal), scores.shape)
        order = np.lexsort((later, -scores), axis=-1)[:, :k]
        scores, order = np.take_along_axis(scores, order, -1), order.copy()
        if self.found is not None:
            order[:, self.found:], scores[:, self.found:] = -1, -np.finfo(np.float32).max
        return scores, order


def test_a_tie_at_the_cut_keeps_the_earliest_copy_and_missing_results_stay_last():
    x = _copies()
    assert _LaterFirst(x).search(x[[5]], 1)[1].tolist() == [[29]]  # what a plain cut would keep
    for k, want in [(1, [5]), (2, [5, 17]), (3, [5, 17, 29])]:
        assert faiss_index.search(_LaterFirst(x), x[[5]], k)[1].tolist() == [want]
    _, positions = faiss_index.search(_LaterFirst(x, found=2), x[[5]], 4)
    assert positions.tolist() == [[17, 29, -1, -1]]  # an IVF probe that found two: what it found, then -1
