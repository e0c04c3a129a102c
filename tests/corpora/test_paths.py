"""Paths a user types (corpora/paths.py): a report file is replaced only when it is one ragdoctor wrote."""
import pytest

from corpora.errors import InputError
from corpora.paths import output_file


def test_a_report_replaces_only_its_own_kind_of_file(tmp_path):
    own = tmp_path / "lab.json"
    own.write_text('{\n  "version": 1,\n  "n_vectors": 10\n}')
    assert output_file(own, what="index lab JSON", signature='"n_vectors"') == own
    empty = tmp_path / "empty.json"
    empty.write_text("")
    output_file(empty, what="index lab JSON", signature='"n_vectors"')
    output_file(tmp_path / "new.json", what="index lab JSON", signature='"n_vectors"')
    log = tmp_path / "results.jsonl"
    log.write_text('{"sample_id": "a"}\n')
    with pytest.raises(InputError, match=r"results\.jsonl: exists and is not a ragdoctor JUnit report: refusing"):
        output_file(log, what="JUnit report", signature='<testsuite name="ragdoctor.gate"')
    assert log.read_text() == '{"sample_id": "a"}\n'
    binary = tmp_path / "photo.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(InputError, match="is not a ragdoctor"):
        output_file(binary, what="report", signature='"combiner_features"')
    assert output_file(log, what="results log") == log  # an append-only log passes no signature

