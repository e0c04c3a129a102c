"""The index manifest (rag/manifest.py): one this process cannot read is named as unreadable, never as a user's own
(foreign) manifest.json."""
import errno

import pytest

from corpora.errors import InputError
from rag.manifest import read_manifest, unreadable


def test_an_unreadable_manifest_says_it_cannot_be_read(tmp_path, monkeypatch):
    import rag.manifest

    (tmp_path / "manifest.json").write_text('{"embedder_id": "x"}')
    assert unreadable(tmp_path / "manifest.json") is None and unreadable(tmp_path / "absent.json") is None

    def denied(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))
    monkeypatch.setattr(rag.manifest, "open", denied, raising=False)
    assert unreadable(tmp_path / "manifest.json") == "cannot be read (Permission denied)"
    with pytest.raises(InputError, match=r"manifest\.json: cannot be read \(Permission denied\): give this process "
                                         r"read access") as err:
        read_manifest(tmp_path)
    assert "not a ragdoctor index manifest" not in str(err.value)
