"""The run folder (corpora/run_folder.py): the one resumable append, the readers of its logs, config and summary."""
import json

import pytest

from corpora.errors import InputError
from corpora.records import Judgement, Trace
from corpora.run_folder import AppendLog, LogIndex, RunFolder, latest
from tests.files import symlink_loop


def T(sid: str, answer: str = "a") -> Trace:
    return Trace(sample_id=sid, question="q?", answer=answer, contexts=[])


def test_resume_makes_only_what_is_missing_and_appends_each_record(tmp_path):
    log = AppendLog(tmp_path / "t.jsonl", Trace, "traces log")
    made: list[list[str]] = []

    def make(batch):
        made.append(batch)
        return [T(sid) for sid in batch]

    first = log.resume(["a", "b"], item_id=str, reusable=latest)
    assert first.run(make, progress=False) and made == [["a"], ["b"]]
    log.path.write_bytes(log.path.read_bytes() + b'{"sample_id": "c", "quest')  # killed mid-write
    second = log.resume(["a", "b", "c", "d"], item_id=str, reusable=latest)
    assert set(second.done) == {"a", "b"} and second.todo == ["c", "d"]
    out = second.run(make, batch_size=2, progress=False)
    assert [t.sample_id for t in out] == ["a", "b", "c", "d"] and made[-1] == ["c", "d"]
    assert [t.sample_id for t in log.read()] == ["a", "b", "c", "d"]  # the torn line is gone, nothing twice


def test_a_whole_last_record_without_its_newline_is_kept(tmp_path):
    log = AppendLog(tmp_path / "t.jsonl", Trace, "traces log")
    log.resume(["a"], item_id=str, reusable=latest).run(lambda b: [T(s) for s in b], progress=False)
    log.path.write_bytes(log.path.read_bytes().rstrip(b"\n"))  # written, or edited, without the final newline
    log.resume(["a", "b"], item_id=str, reusable=latest).run(lambda b: [T(s) for s in b], progress=False)
    assert [t.sample_id for t in log.read()] == ["a", "b"]  # "a" neither dropped (and made again) nor glued to "b"


def test_a_log_that_is_not_ours_is_refused_before_anything_is_written(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"name": "mine"}\n')
    with pytest.raises(InputError, match="not a ragdoctor traces log"):
        AppendLog(path, Trace, "traces log").resume(["a"], item_id=str, reusable=latest)
    assert path.read_text() == '{"name": "mine"}\n'


def test_the_later_record_of_a_sample_wins():
    assert [t.answer for t in latest([T("a", "1"), T("b"), T("a", "2")]).values()] == ["a", "2"]


def test_log_index_reads_keys_from_the_line_start_and_survives_a_torn_tail(tmp_path):
    log = tmp_path / "results.jsonl"
    lines = [Judgement(sample_id="a", eval_hash="1"), Judgement(sample_id="b"), Judgement(sample_id="a", eval_hash="3"),
             Judgement(sample_id='c"q', eval_hash="4")]
    log.write_text("".join(j.model_dump_json() + "\n" for j in lines) + '{"sample_id": "a", "eval_hash": "5", "to',
                   encoding="utf-8")
    index = LogIndex(log, Judgement)
    assert list(index) == ["a", "b", 'c"q'] and index["a"].eval_hash == "3" and index['c"q'].eval_hash == "4"
    assert index.get("missing") is None and not LogIndex(tmp_path / "absent.jsonl", Judgement)
    current = LogIndex(log, Judgement, ("4", {'c"q': ""}))
    assert list(current) == ['c"q']


def test_log_index_never_lists_a_sample_it_cannot_read(tmp_path):
    """Audit: a cut-off last line (an evaluation in progress or killed) of a sample with no earlier line was listed,
    and reading it raised KeyError in every dashboard page. It is not listed (read_log drops it too); a damaged line
    elsewhere with no earlier line of its sample is an InputError naming the line, never a KeyError."""
    log = tmp_path / "results.jsonl"
    whole = Judgement(sample_id="a", eval_hash="1").model_dump_json()
    log.write_text(whole + "\n" + Judgement(sample_id="b", eval_hash="1").model_dump_json()[:40], encoding="utf-8")
    index = LogIndex(log, Judgement)
    assert list(index) == ["a"] and len(index) == 1 and [j.sample_id for j in index.values()] == ["a"]
    assert list(LogIndex(log, Judgement, ("1", {"a": "", "b": ""}))) == ["a"]
    log.write_text(whole + "\n" + '{"sample_id": "c", "eval_hash": 5}\n' + whole + "\n", encoding="utf-8")
    index = LogIndex(log, Judgement)
    assert list(index) == ["a", "c"] and index["a"].sample_id == "a"
    with pytest.raises(InputError, match=r"results\.jsonl:2: field 'eval_hash'"):
        index["c"]


def test_config_names_the_current_samples_and_readers_take_their_lines(tmp_path):
    run = RunFolder(tmp_path / "run")
    key = run.write_config({"eval_hash": "e1"}, {"a": "h1", "b": "h2"})
    assert run.config()["format"] == 2 and run.config()["run_key"] == key
    for j in (Judgement(sample_id="a", eval_hash="e1", sample_hash="h0"), Judgement(sample_id="a", eval_hash="e1",
              sample_hash="h1"), Judgement(sample_id="b", eval_hash="e0", sample_hash="h2")):
        run.results.append(j)
    assert [(j.sample_id, j.sample_hash) for j in run.judgements()] == [("a", "h1")]  # b: judged otherwise, not yet
    assert list(run.judgements_by_id()) == ["a"]
    run.write_json("summary.json", {"metrics": [], "run_key": "older"})
    assert run.summary() is None and run.stale_summary({"run_key": "older"})
    run.write_json("summary.json", {"metrics": [], "run_key": key})
    assert run.summary() == {"metrics": [], "run_key": key}


def test_an_eval_never_writes_over_files_it_did_not_write(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "traces.jsonl").write_text("")
    (folder / "summary.json").write_text("{}")
    with pytest.raises(InputError, match="was not written by `ragdoctor eval`"):
        RunFolder(folder).check_eval_writable()
    RunFolder(tmp_path / "new").check_eval_writable()


def test_finding_runs_and_their_stamp(tmp_path):
    a, b = tmp_path / "runs" / "a", tmp_path / "runs" / "b"
    for run in (a, b):
        run.mkdir(parents=True)
        (run / "traces.jsonl").write_text(T("x").model_dump_json() + "\n")
    (tmp_path / "runs" / "junk").mkdir()
    assert set(RunFolder.find([tmp_path / "runs"])) == {a, b} and RunFolder.find([a]) == [a]
    stamp = RunFolder(a).stamp()
    (a / "results.jsonl").write_text("")
    assert RunFolder(a).stamp() != stamp


def test_write_if_ours_leaves_a_foreign_file(tmp_path):
    run = RunFolder(tmp_path)
    (tmp_path / "run_summary.json").write_text("mine")
    assert not run.write_if_ours("run_summary.json", "{}", ours=lambda text: json.loads(text) == {})
    assert (tmp_path / "run_summary.json").read_text() == "mine"


def test_records_made_elsewhere_stream_into_the_log(tmp_path):
    """An engine that makes records in workers appends each as it arrives (Resume.add), in any order."""
    log = AppendLog(tmp_path / "t.jsonl", Trace, "traces log")
    resume = log.resume(["a", "b", "c"], item_id=str, reusable=latest)
    for sid in reversed(resume.todo):
        resume.add(sid, T(sid))
    assert [t.sample_id for t in resume.records()] == ["a", "b", "c"]
    assert [t.sample_id for t in log.read()] == ["c", "b", "a"]


def test_input_errors_keep_one_section_per_step(tmp_path):
    """An eval after an import (or a second import of another file) replaces only its own skipped lines."""
    run = RunFolder(tmp_path / "r")
    run.record_input_errors("import /a/spans.json", ["spans.json: span 1: no id; span skipped"])
    run.record_input_errors("import /a/more.json", ["more.json: span 2: bad time"])
    run.record_input_errors("eval", ["traces.jsonl:3: field 'question': empty"])
    assert run.input_errors() == ["spans.json: span 1: no id; span skipped", "more.json: span 2: bad time",
                                  "traces.jsonl:3: field 'question': empty"]
    run.record_input_errors("eval", [])  # a clean re-evaluation: its section goes, the imports' stay
    run.record_input_errors("import /a/spans.json", ["spans.json: span 9: other"])
    assert run.input_errors() == ["more.json: span 2: bad time", "spans.json: span 9: other"]
    text = run.file("input_errors.txt").read_text(encoding="utf-8")
    assert text.splitlines()[0] == "# ragdoctor import /a/more.json"
    # a file from before sections: its lines belong to no step and are replaced, as before
    run.file("input_errors.txt").write_text("old.jsonl:1: field 'x': bad\n", encoding="utf-8")
    assert run.input_errors() == ["old.jsonl:1: field 'x': bad"]
    run.record_input_errors("eval", ["new.jsonl:2: field 'y': bad"])
    assert run.input_errors() == ["new.jsonl:2: field 'y': bad"]
    # a user's own file is left alone when the step says so
    run.file("input_errors.txt").write_text("MY NOTES\n", encoding="utf-8")
    assert not run.record_input_errors("run", ["q.jsonl:1: bad"], ours=lambda text: False)
    assert run.file("input_errors.txt").read_text(encoding="utf-8") == "MY NOTES\n"


def test_a_symbolic_link_loop_is_named_not_raised_as_a_runtime_error(tmp_path):
    from corpora.paths import refuse_symlink_loop, resolved
    from corpora.paths import symlink_loop as loop_in

    loop = symlink_loop(tmp_path)
    assert loop_in(loop) == loop and loop_in(loop / "x" / "y") == loop
    assert loop_in(tmp_path / "absent" / "x") is None and loop_in(tmp_path) is None
    with pytest.raises(InputError, match=r"loop1: is a symbolic link loop \(on the way to .*loop1/x\)"):
        refuse_symlink_loop(loop / "x")
    with pytest.raises(InputError, match="loop1: is a symbolic link loop"):
        resolved(loop)
    assert resolved(tmp_path / "new") == (tmp_path / "new").resolve()
    run = RunFolder(loop)  # eval --out / run --out on a loop: refused before anything, not "File exists" at the end
    with pytest.raises(InputError, match="symbolic link loop"):
        run.check_eval_writable()
    with pytest.raises(InputError, match="symbolic link loop"):
        RunFolder.of_traces(loop / "traces.jsonl").check_traces_writable()


def test_a_path_that_is_not_utf8_is_written_escaped_and_no_temporary_file_is_left(tmp_path):
    run = RunFolder(tmp_path / "run")
    source = str(tmp_path / "r\udcffecs.jsonl")  # a name from a shell with a byte that is not UTF-8
    run.write_json("config.json", {"source": source})
    assert json.loads((tmp_path / "run" / "config.json").read_text(encoding="utf-8"))["source"] == source
    run.write_text("input_errors.txt", f"{source}:2: bad\n")
    assert (tmp_path / "run" / "input_errors.txt").read_text(encoding="utf-8") == \
        source.replace("\udcff", "\\udcff") + ":2: bad\n"
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["config.json", "input_errors.txt"]


def test_a_failed_write_names_the_file_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    from pathlib import Path

    run = RunFolder(tmp_path / "run")
    run.write_text("summary.json", "{}")

    def full(self, target):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(Path, "replace", full)
    with pytest.raises(OSError) as failed:
        run.write_text("summary.json", '{"new": 1}')
    assert failed.value.filename == str(tmp_path / "run" / "summary.json")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["summary.json"]
    assert (tmp_path / "run" / "summary.json").read_text() == "{}"  # the earlier file is whole


def test_an_eval_folder_whose_name_is_not_utf8_is_refused_up_front(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"not UTF-8 text, and results\.parquet cannot be written"):
        RunFolder("o\udcff").check_eval_writable()
    RunFolder("ok").check_eval_writable()


def test_a_report_write_error_names_the_file(tmp_path, monkeypatch):
    import io

    import corpora.paths as paths

    class Full(io.StringIO):
        def write(self, text):
            raise OSError(28, "No space left on device")
    monkeypatch.setattr(paths, "open", lambda *a, **k: Full(), raising=False)
    with pytest.raises(OSError) as failed:
        paths.write_report(tmp_path / "lab.json", "{}")
    assert failed.value.filename == str(tmp_path / "lab.json") and failed.value.errno == 28
