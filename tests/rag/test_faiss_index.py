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
