"""Content digests (corpora/digest.py): a file's sha256, and a folder's digest that follows its content, not its path."""
import hashlib
import shutil

from corpora.digest import folder_digest, sha256_file
from tests.files import rewrite


def test_sha256_file_matches_hashlib(tmp_path):
    p = tmp_path / "f.bin"
    data = bytes(range(256)) * 9000  # more than one read block
    p.write_bytes(data)
    assert sha256_file(p) == hashlib.sha256(data).hexdigest()


def test_folder_digest_follows_content_not_location(tmp_path):
    a = tmp_path / "judge"
    (a / "support").mkdir(parents=True)
    (a / "support" / "model.safetensors").write_bytes(b"weights")
    (a / "combiner.json").write_text('{"support": 1}')
    (a / "MODEL_CARD.md").write_text("card")
    first = folder_digest(a, skip=("MODEL_CARD.md",))
    assert len(first) == 12
    b = tmp_path / "elsewhere" / "judge"
    shutil.copytree(a, b)
    assert folder_digest(b, skip=("MODEL_CARD.md",)) == first  # moved: the same judge
    (a / "MODEL_CARD.md").write_text("a longer card")
    assert folder_digest(a, skip=("MODEL_CARD.md",)) == first  # documentation changes no verdict
    rewrite(a / "combiner.json", b'{"support": 2}')  # the same size, a newer mtime
    assert folder_digest(a, skip=("MODEL_CARD.md",)) != first  # re-combined in place: another judge
    rewrite(a / "combiner.json", b'{"support": 1}')
    (a / "support" / "extra.json").write_text("{}")
    assert folder_digest(a, skip=("MODEL_CARD.md",)) != first  # a new file counts
