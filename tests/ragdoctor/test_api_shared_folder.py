"""ragdoctor.evaluate and its EvalResult when a run folder is shared: two evaluations of one folder at once (threads),
and a result whose folder was evaluated again since."""
from __future__ import annotations

import json
import re
import threading

import pytest

import ragdoctor
from corpora.errors import InputError
from corpora.records import MetricResult
from corpora.run_folder import LOCK, RunFolder

ROW = {"id": "kv", "question": "What does the KV cache store?",
       "contexts": [{"id": "kv#0", "doc_id": "kv", "text": "The KV cache stores keys and values for every token."}],
       "answer": "The KV cache stores keys and values for every token.", "reference": "Keys and values."}
MOON = {**ROW, "id": "moon", "answer": "Optimizer momentum lives on the moon."}
IN_USE = re.compile(r"^(?P<path>.+): in use by another ragdoctor evaluation \(pid \d+, since [^)]+\): wait for it to "
                    r"finish, or choose another folder$")


class Gate:
    """A built judge that holds its evaluation inside the judging step until ``go`` is set."""

    name, family, config_id = "gated", "custom", "gated:v1"

    def __init__(self):
        self.inside, self.go = threading.Event(), threading.Event()

    def supports(self, metric):
        return metric == "groundedness"

    def judge(self, metric, traces):
        self.inside.set()
        self.go.wait(30)
        return [MetricResult.ok(metric, self.name, 1.0) for _ in traces]


def _complete(run_dir, n: int) -> None:
    """The folder holds one whole evaluation of ``n`` samples: its summary is current, nothing is left half-done."""
    run = RunFolder(run_dir)
    assert run.summary() is not None and run.summary()["n_samples"] == n
    assert len(run.judgements()) == n
    assert not run.file(LOCK).exists()
    assert not [p.name for p in run.path.iterdir() if p.name.endswith(".tmp")]


def test_a_second_evaluation_of_a_folder_in_use_is_refused_in_one_line(tmp_path):
    out = tmp_path / "run"
    gate = Gate()
    first: dict = {}
    t = threading.Thread(target=lambda: first.setdefault("result", ragdoctor.evaluate([ROW], judges=[gate], out=out)))
    t.start()
    assert gate.inside.wait(30)  # the first evaluation is judging: config.json is written, results.jsonl is not
    with pytest.raises(InputError) as err:
        ragdoctor.evaluate([ROW, MOON], judges="lexical", metrics="groundedness", out=out)
    m = IN_USE.match(str(err.value))
    assert m and m["path"] == str(out), str(err.value)
    gate.go.set()
    t.join(30)
    assert [j.sample_id for j in first["result"].judgements] == ["kv"]
    _complete(out, 1)  # the refused evaluation wrote nothing into it


def test_two_threads_evaluating_into_one_new_folder_never_get_a_wrong_message(tmp_path):
    rows = [{**ROW, "id": f"q{i}"} for i in range(20)]
    for trial in range(4):
        out = tmp_path / f"run{trial}"
        start = threading.Barrier(2)
        said: list[str] = []

        def go(out=out, start=start, said=said):
            start.wait()
            try:
                ragdoctor.evaluate(rows, judges="lexical", metrics="groundedness", out=out, batch_size=1)
                said.append("ok")
            except InputError as exc:
                said.append(str(exc))

        threads = [threading.Thread(target=go) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert "ok" in said and all(s == "ok" or IN_USE.match(s) for s in said), said
        _complete(out, 20)


def test_diagnose_of_a_result_whose_folder_was_evaluated_again_diagnoses_its_own_judgements(tmp_path, caplog):
    out = tmp_path / "run"
    old = ragdoctor.evaluate([ROW, MOON], judges="lexical", metrics="groundedness", out=out)
    new = ragdoctor.evaluate([{**ROW, "id": "other"}], judges="lexical", metrics="groundedness", out=out)
    assert new.diagnose()["sample_id"].tolist() == ["other"]
    written = (out / "diagnoses.jsonl").read_text()
    with caplog.at_level("WARNING", logger="ragdoctor.notices"):
        table = old.diagnose()
    assert table["sample_id"].tolist() == ["kv", "moon"]  # what `old` measured, not what the folder holds now
    assert [d.sample_id for d in old.diagnoses or []] == ["kv", "moon"]
    assert table.set_index("sample_id").loc["moon", "category"] != "ok"
    said = [r.getMessage() for r in caplog.records]
    assert any(f"{out}: holds a later evaluation than this result's" in s for s in said), said
    assert (out / "diagnoses.jsonl").read_text() == written  # the later evaluation's diagnoses are left alone
    assert json.loads((out / "diagnosis.json").read_text())["run_key"] == new.run_key


def test_calibration_of_a_result_whose_folder_was_evaluated_again_is_refused(tmp_path):
    """The labels are the folder's, for the samples it holds now: calibrating another evaluation's scores with them
    would mix two evaluations, so it is one InputError naming the folder (and so is gate(ppi=True))."""
    out = tmp_path / "run"
    old = ragdoctor.evaluate([ROW], judges="lexical", metrics="groundedness", out=out)
    assert old.calibrated_rows() == []  # no labels: nothing to calibrate, and no error
    ragdoctor.evaluate([MOON], judges="lexical", metrics="groundedness", out=out)
    with pytest.raises(InputError, match=rf"^{re.escape(str(out))}: holds a later evaluation than this result's"):
        old.calibrated_rows()
    with pytest.raises(InputError, match="holds a later evaluation"):
        old.gate({"groundedness": 0.5}, ppi=True, ppi_fallback=True)
    assert old.gate({"groundedness": 0.5}).passed  # the result's own summary needs no folder


def test_diagnose_of_a_result_whose_folder_was_removed_diagnoses_and_writes_nothing(tmp_path, caplog):
    import shutil

    out = tmp_path / "run"
    old = ragdoctor.evaluate([ROW, MOON], judges="lexical", metrics="groundedness", out=out)
    shutil.rmtree(out)
    with caplog.at_level("WARNING", logger="ragdoctor.notices"):
        assert old.diagnose()["sample_id"].tolist() == ["kv", "moon"]
    assert any(f"{out}: no longer holds this result's evaluation" in r.getMessage() for r in caplog.records)
    assert not out.exists()


def test_a_result_whose_folder_was_resumed_with_the_same_data_is_still_its_folders(tmp_path):
    out = tmp_path / "run"
    old = ragdoctor.evaluate([ROW, MOON], judges="lexical", metrics="groundedness", out=out)
    again = ragdoctor.evaluate([ROW, MOON], judges="lexical", metrics="groundedness", out=out)
    assert old.run_key == again.run_key
    old.diagnose()
    assert json.loads((out / "diagnosis.json").read_text())["run_key"] == old.run_key
    assert not RunFolder(out).stale_diagnoses()


@pytest.mark.parametrize("kind", ["file", "dangling link", "link to a file"])
def test_an_out_that_is_no_folder_is_one_input_error_and_nothing_is_written(tmp_path, kind):
    out = tmp_path / "out"
    target = tmp_path / "target"
    if kind == "file":
        out.write_text("mine")
    elif kind == "dangling link":
        out.symlink_to(target)
    else:
        target.write_text("mine")
        out.symlink_to(target)
    with pytest.raises(InputError) as err:
        ragdoctor.evaluate([ROW], judges="lexical", metrics="groundedness", out=out)
    assert str(err.value).startswith(f"{out}: ") and "\n" not in str(err.value)
    assert not target.is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"out"} | ({"target"} if target.exists() else set()))


def test_an_out_that_links_to_a_folder_is_written_through_the_link(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "real")
    ragdoctor.evaluate([ROW], judges="lexical", metrics="groundedness", out=tmp_path / "out")
    _complete(tmp_path / "real", 1)


def test_a_pipeline_run_into_a_folder_an_evaluation_holds_is_refused_and_writes_nothing(tmp_path):
    from rag.llm import FakeLLM

    out = tmp_path / "run"
    pipe = ragdoctor.Pipeline({"embedding": {"model": "fake"}, "retrieval": {"rerank": False, "mode": "bm25"},
                               "index_dir": str(tmp_path / "idx")}, llm=FakeLLM())
    with RunFolder(out).claim():
        with pytest.raises(InputError) as err:
            pipe.run(["What does the KV cache store?"], out=out)
        assert IN_USE.match(str(err.value)) and str(err.value).startswith(f"{out}: "), str(err.value)
        assert [p.name for p in out.iterdir()] == [LOCK]
    result = pipe.run(["What does the KV cache store?"], out=out)  # once it is let go, the run goes ahead
    assert len(result.traces) == 1 and not (out / LOCK).exists()
    pipe.close()


def test_an_evaluation_interrupted_before_its_first_result_resumes_in_its_folder(tmp_path):
    """Ctrl+C while the first batch is judged: config.json and warnings.txt are written, results.jsonl is not, and the
    lock is let go. The folder is still the evaluation's: a rerun goes ahead, never refused as a user's folder."""

    class Interrupted(Gate):
        def judge(self, metric, traces):
            raise KeyboardInterrupt

    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        ragdoctor.evaluate([ROW], judges=[Interrupted()], out=out)
    assert "config.json" in {p.name for p in out.iterdir()} and not (out / "results.jsonl").exists()
    assert not (out / LOCK).exists()
    ragdoctor.evaluate([ROW], judges="lexical", metrics="groundedness", out=out)
    _complete(out, 1)
