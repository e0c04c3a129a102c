"""Where an index is written (rag/index_dir.py): a folder given as a symbolic link loop, a manifest this process cannot
read, and an on-disk index under a name faiss cannot open are each one line (InputError, exit 2), before any work."""
import errno

import pytest

from corpora.errors import InputError
from corpora.records import Document
from rag.config import ChunkingConfig, IndexConfig
from rag.embeddings import FakeEmbedder
from rag.index_dir import check_index_name, check_index_target, index_lock
from rag.store import build_index, ensure_index
from tests.files import symlink_loop

DOCS = [Document(id=f"d{i}", title=f"t{i}", text=f"note {i} about topic{i} and marker{i}. " * 3) for i in range(6)]
CH = ChunkingConfig(chunk_size=64, chunk_overlap=8)


def test_a_symbolic_link_loop_as_the_index_folder_is_an_input_error(tmp_path):
    loop = symlink_loop(tmp_path)
    for target in (loop, loop / "sub"):
        with pytest.raises(InputError, match="loop1: is a symbolic link loop"):
            check_index_target(target)
        with pytest.raises(InputError, match="loop1: is a symbolic link loop"):
            ensure_index(DOCS, target, FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    with pytest.raises(InputError, match="symbolic link loop"), index_lock(loop):
        pass


def _unreadable(monkeypatch):
    """A manifest.json this process may not read (as root, chmod 000 would not stop it)."""
    import rag.manifest

    real = open

    def fake_open(path, *args, **kwargs):
        if str(path).endswith("manifest.json"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, *args, **kwargs)
    monkeypatch.setattr(rag.manifest, "open", fake_open, raising=False)


def test_an_unreadable_manifest_is_called_unreadable_not_foreign(tmp_path, monkeypatch):
    build_index(DOCS, tmp_path / "idx", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    _unreadable(monkeypatch)
    with pytest.raises(InputError, match=r"idx/manifest\.json: cannot be read \(Permission denied\)") as err:
        check_index_target(tmp_path / "idx")
    assert "not a ragdoctor index manifest" not in str(err.value)
    with pytest.raises(InputError, match=r"manifest\.json: cannot be read \(Permission denied\)"):
        ensure_index(DOCS, tmp_path / "idx", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())


def test_an_on_disk_index_under_a_name_that_is_not_utf8_is_refused_before_any_work(tmp_path):
    with pytest.raises(InputError, match="not UTF-8 text, and faiss opens an on-disk index"):
        check_index_name(tmp_path / "idx\udcff", on_disk=True)
    check_index_name(tmp_path / "idx\udcff", on_disk=False)  # in memory: written through a file handle
    check_index_name(tmp_path / "idx", on_disk=True)
