"""Paths a user types (corpora/paths.py): a report file is replaced only when it is one ragdoctor wrote."""
import pytest

from corpora.errors import InputError
from corpora.paths import input_file, output_file, output_folder
from tests.files import symlink_loop


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



def test_a_path_that_is_no_regular_file_is_refused_in_one_line(tmp_path):
    """A device (/dev/full: the report is lost after the work is done), a FIFO (the write blocks forever) or a socket
    takes no report and no log: refused before anything is written, for every caller (gate --junit, index-lab and
    retrieval-lab --out, judge crossfit-report --json, a run's logs)."""
    import os
    import socket

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for signature in ('<testsuite name="ragdoctor.gate"', None):  # a report, and a log that passes no signature
        with pytest.raises(InputError, match=r"fifo: is not a regular file \(a device, FIFO or socket\)"):
            output_file(fifo, what="JUnit report", signature=signature)
    for device in ("/dev/full", "/dev/null"):
        if os.path.exists(device):
            with pytest.raises(InputError, match=f"{device}: is not a regular file"):
                output_file(device, what="index lab JSON", signature='"n_vectors"')
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        with pytest.raises(InputError, match=r"s\.sock: is not a regular file"):
            output_file(sock_path, what="report", signature='"combiner_features"')


def test_a_report_that_cannot_be_read_to_check_it_is_refused_as_an_input_error(tmp_path, monkeypatch):
    """A write-only file (chmod 200) cannot be read to tell whether it is a report of this kind: refused as an
    InputError naming it (the gate turns that into a warning for its default RUN/gate.xml), never a bare
    PermissionError. Root reads it whatever its mode, so the read is made to fail here."""
    report = tmp_path / "gate.xml"
    report.write_text('<testsuite name="ragdoctor.gate" tests="0"/>\n')

    def unreadable(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(report))

    monkeypatch.setattr("corpora.paths.open", unreadable, raising=False)
    with pytest.raises(InputError, match=r"gate\.xml: cannot be read to tell whether it is a ragdoctor JUnit report "
                                         r"\(Permission denied\): refusing to replace it"):
        output_file(report, what="JUnit report", signature='<testsuite name="ragdoctor.gate"')


def test_a_path_that_cannot_be_looked_at_is_an_input_error(tmp_path):
    symlink_loop(tmp_path)
    with pytest.raises(InputError, match=r"loop1: cannot be used for the JUnit report: Too many levels"):
        output_file(tmp_path / "loop1", what="JUnit report", signature='<testsuite name="ragdoctor.gate"')


def test_a_symbolic_link_loop_is_named_as_one_for_an_input_and_an_output_folder(tmp_path):
    loop = symlink_loop(tmp_path)
    for check in (input_file, lambda p: output_folder(p, markers=("traces.jsonl",))):
        with pytest.raises(InputError, match="is a symbolic link loop"):  # not "file not found" / "File exists"
            check(loop)
