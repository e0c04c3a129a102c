"""`ragdoctor label | summary`, `ragdoctor eval` with labels, and `ragdoctor gate --ppi`: the corrected lower bound is
gated on, a metric without enough labels fails with the reason (or falls back with --ppi-fallback), and the JUnit
report says which estimate each check used."""
from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from corpora.labels import read_labels
from eval.labelling import queue
from ragdoctor.cli import main
from tests.eval.test_judging import rows, write_jsonl
from tests.ragdoctor.dashboard.runs import synthetic_run


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """A synthetic run of 90 samples; 40 groundedness labels (read off the lexical judge's score, in queue order) and
    5 answer-correctness labels, written through the CLI."""
    run = synthetic_run(tmp_path_factory.mktemp("labels") / "run", 90)
    res = pd.read_parquet(run / "results.parquet")
    g = res[(res.metric == "groundedness") & (res.judge == "lexical") & (res.status == "ok")]
    scores = dict(zip(g.sample_id, g.value))
    for sid in queue(scores)[:40]:
        assert main(["label", str(run), "--sample", sid, "--metric", "groundedness", "--value",
                     "yes" if scores[sid] >= 0.5 else "no", "--who", "ann"]) == 0
    for sid in queue(scores)[:5]:
        assert main(["label", str(run), "--sample", sid, "--metric", "answer_correctness", "--value", "0.5"]) == 0
    return run


def test_label_command_appends_and_refuses_bad_input(labelled, capsys):
    labels = read_labels(labelled)
    assert len(labels) == 45 and {lb.who for lb in labels if lb.metric == "groundedness"} == {"ann"}
    assert {lb.value for lb in labels if lb.metric == "groundedness"} == {0.0, 1.0}
    before = (labelled / "labels.jsonl").read_bytes()
    capsys.readouterr()
    assert main(["label", str(labelled), "--sample", "nope", "--metric", "groundedness", "--value", "1"]) == 2
    assert main(["label", str(labelled), "--sample", "s00001", "--metric", "groundedness", "--value", "2"]) == 2
    with pytest.raises(SystemExit) as blank:  # refused while the command line is read, as every blank option value
        main(["label", str(labelled), "--sample", "s00001", "--metric", "groundedness", "--value", "1", "--who", " "])
    assert blank.value.code == 2
    assert main(["label", str(labelled), "--sample", "s00001", "--metric", "groundedness", "--value", "1",
                 "--who", "ann\nbob"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(e.startswith("ragdoctor: error: ") for e in err)
    assert err[3].startswith("ragdoctor: error: --who: holds a control character")
    assert "field 'sample': no sample 'nope' in this run" in err[0] and "within [0, 1]" in err[1]
    assert err[2].startswith("ragdoctor: error: label: --who: a blank value")  # the option, not a file
    assert (labelled / "labels.jsonl").read_bytes() == before


def test_summary_command_prints_the_corrected_means(labelled, capsys):
    assert main(["summary", str(labelled)]) == 0
    out = capsys.readouterr().out
    assert "Calibrated by human labels" in out and "PPI 95% CI" in out
    table = out.split("Calibrated by human labels")[1].splitlines()
    lines = {tuple(ln.split()[:2]): ln for ln in table if ln.startswith(("groundedness", "answer_correctness"))}
    assert "ppi++" in lines[("groundedness", "lexical")]
    assert "5 labels, need 30" in lines[("answer_correctness", "lexical")]


def test_summary_without_labels_says_how_to_add_them(tmp_path, capsys):
    run = synthetic_run(tmp_path / "bare", 10)
    assert main(["summary", str(run)]) == 0
    assert "no human labels" in capsys.readouterr().out


def test_eval_prints_the_calibrated_table_when_the_run_has_labels(tmp_path, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", rows())
    out_dir = tmp_path / "ev"
    assert main(["eval", str(src), "--judges", "lexical", "--metrics", "groundedness", "--out", str(out_dir)]) == 0
    assert "Calibrated" not in capsys.readouterr().out
    assert main(["label", str(out_dir), "--sample", "good", "--metric", "groundedness", "--value", "yes"]) == 0
    assert main(["eval", str(src), "--judges", "lexical", "--metrics", "groundedness", "--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
    assert "Calibrated by human labels" in out and "1 label, need 30" in out
    assert json.loads((out_dir / "summary.json").read_text())["calibrated"][0]["n_labels"] == 1


def _junit(run) -> dict[str, dict]:
    cases = ET.parse(run / "gate.xml").getroot().findall("testcase")
    return {c.get("name"): {"props": {p.get("name"): p.get("value") for p in c.iter("property")},
                            "failure": (c.find("failure").get("message") if c.find("failure") is not None else None)}
            for c in cases}


def test_gate_ppi_passes_and_fails_on_the_corrected_lower_bound(labelled, capsys):
    base = ["gate", str(labelled), "--pyproject", os.devnull, "--ppi"]
    assert main([*base, "--min", "groundedness:lexical=0.2"]) == 0
    out = capsys.readouterr().out
    assert "PASS  groundedness:lexical" in out and "PPI-corrected lower 95% bound" in out and "40 labels" in out
    case = _junit(labelled)["groundedness:lexical"]
    assert case["props"]["estimate"] == "PPI corrected CI lower bound (ppi++)" and case["failure"] is None
    assert main([*base, "--min", "groundedness:lexical=0.95"]) == 1
    assert "FAIL  groundedness:lexical" in capsys.readouterr().out
    # the plain judge gate on the same threshold reads another number, and says so
    assert main(["gate", str(labelled), "--pyproject", os.devnull, "--min", "groundedness:lexical=0.2"]) == 0
    assert _junit(labelled)["groundedness:lexical"]["props"]["estimate"] == "judge mean"


def test_gate_ppi_without_enough_labels_fails_with_the_reason_unless_told_to_fall_back(labelled, capsys):
    base = ["gate", str(labelled), "--pyproject", os.devnull, "--ppi", "--min", "answer_correctness:lexical=0.1"]
    assert main(base) == 1
    out = capsys.readouterr().out
    assert "no value to check" in out and "5 labels, need 30" in out and "--ppi-fallback" in out
    case = _junit(labelled)["answer_correctness:lexical"]
    assert case["props"]["estimate"] == "none (too few labels)" and "5 labels, need 30" in case["failure"]
    assert main([*base, "--ppi-fallback"]) == 0
    out = capsys.readouterr().out
    assert "fell back to the judge's estimate" in out
    assert _junit(labelled)["answer_correctness:lexical"]["props"]["estimate"] == "judge mean"
    assert main(["gate", str(labelled), "--pyproject", os.devnull, "--ppi", "--min", "context_precision=0.1"]) == 1
    assert "0 labels, need 30" in capsys.readouterr().out


def test_gate_ppi_from_pyproject(labelled, tmp_path, capsys):
    toml = tmp_path / "pyproject.toml"
    toml.write_text('[tool.ragdoctor.gate]\nmin = { "groundedness:lexical" = 0.2 }\nuse_ppi = true\n')
    assert main(["gate", str(labelled), "--pyproject", str(toml)]) == 0
    assert "PPI-corrected" in capsys.readouterr().out
    toml.write_text('[tool.ragdoctor.gate]\nmin = { "groundedness:lexical" = 0.2 }\nuse_ppi = "yes"\n')
    assert main(["gate", str(labelled), "--pyproject", str(toml)]) == 2
    assert "use_ppi must be true or false" in capsys.readouterr().err


def test_python_api_gate_ppi_and_calibrated_table(tmp_path):
    import ragdoctor
    from corpora.labels import add_labels
    from corpora.records import Label

    data = [{"id": f"r{i}", "question": "What does the KV cache store?",
             "contexts": ["The KV cache stores keys and values for every token."],
             "answer": "The KV cache stores keys and values." if i % 3 else "It stores optimizer momentum on disk.",
             "reference": "Keys and values."} for i in range(40)]
    result = ragdoctor.evaluate(data, judges="lexical", metrics="groundedness", out=tmp_path / "api")
    assert result.calibrated().empty
    assert not result.gate({"groundedness": 0.1}, ppi=True)  # no labels: fails, saying why
    add_labels(result.run_dir, [Label(sample_id=f"r{i}", metric="groundedness", value=float(i % 3 != 0), who="ann")
                                for i in range(32)])
    table = result.calibrated()
    assert list(table["labels"]) == [32] and table["PPI CI low"].iloc[0] <= table["PPI mean"].iloc[0]
    verdict = result.gate({"groundedness": 0.1}, ppi=True)
    assert verdict and verdict.checks[0].estimate.startswith("PPI corrected")


def test_labels_no_summary_counts_are_said(tmp_path, capsys):
    """A label of a metric the run did not measure is kept with a warning; summary counts the labels it cannot use
    (metric not measured, sample not in the run) instead of saying there are none."""
    import json

    rows = tmp_path / "rows.jsonl"
    ctx = [{"id": "kv#0", "doc_id": "kv", "text": "The KV cache stores keys and values."}]
    rows.write_text("".join(json.dumps({"id": f"r{i}", "question": "What does the KV cache store?", "contexts": ctx,
                                        "answer": "Keys and values.", "reference": "Keys and values."}) + "\n"
                            for i in range(3)))
    run = tmp_path / "run"
    assert main(["eval", str(rows), "--judges", "lexical", "--metrics", "groundedness", "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["label", str(run), "--sample", "r0", "--metric", "answer_correctness", "--value", "yes"]) == 0
    err = capsys.readouterr().err
    assert "this run did not measure answer_correctness (it measured groundedness)" in err
    with open(run / "labels.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"sample_id": "zzz", "metric": "groundedness", "value": 1.0, "who": "me"}) + "\n")
    assert main(["summary", str(run)]) == 0
    out = capsys.readouterr().out
    assert "2 label(s) not counted: 1 answer_correctness not measured by this run; 1 sample not in this run" in out
    assert "no human labels counted on this run's samples yet" in out


def test_a_label_of_an_answer_that_changed_since_is_not_counted_and_summary_says_so(tmp_path, capsys):
    """`ragdoctor label` records the sample's hash (here, without config.json, its latest trace's); once the sample is
    answered again, summary leaves the label out and says why."""
    from corpora.records import Trace

    run = synthetic_run(tmp_path / "run", 10)
    trace = Trace.model_validate_json((run / "traces.jsonl").read_text().splitlines()[0])
    assert main(["label", str(run), "--sample", trace.sample_id, "--metric", "groundedness", "--value", "yes",
                 "--who", "ann"]) == 0
    assert json.loads((run / "labels.jsonl").read_text())["sample_hash"] == trace.content_hash()
    capsys.readouterr()
    assert main(["summary", str(run)]) == 0
    assert "not counted" not in capsys.readouterr().out
    with open(run / "traces.jsonl", "a", encoding="utf-8") as fh:  # the sample answered again
        fh.write(trace.model_copy(update={"answer": "Another answer."}).model_dump_json() + "\n")
    assert main(["summary", str(run)]) == 0
    out = capsys.readouterr().out
    assert "1 label(s) not counted: 1 labelled an earlier answer of their sample (it changed since; label it again)" \
        in out
