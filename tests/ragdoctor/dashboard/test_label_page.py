"""The Label page (AppTest): one click per label appends to labels.jsonl with who and when, the page moves on to the
next sample of the stratified queue when every metric is labelled, skips, keeps the judges' verdicts hidden until
asked, remembers who is labelling across pages; and the Compare page shows PPI-corrected estimates when both runs
have enough labels."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpora.labels import add_labels, read_labels
from corpora.records import Label
from eval.labelling import queue
from ragdoctor.dashboard import data as rd
from ragdoctor.dashboard import label_data as ld
from tests.ragdoctor.dashboard.runs import synthetic_run
from tests.ragdoctor.dashboard.test_pages import app, texts


@pytest.fixture()
def run(tmp_path) -> Path:
    return synthetic_run(tmp_path / "to-label", 40)


def current_sample(at) -> str:
    head = next(m.value for m in at.markdown if m.value.startswith("#### Sample `"))
    return head.split("`")[1]


def test_label_clicks_append_labels_and_move_to_the_next_sample(run):
    expected = queue(ld.scores_for(rd.load_run(run), "groundedness"))
    at = app(str(run), "label")
    assert current_sample(at) == expected[0]
    assert all(b.disabled for b in at.button if b.key.startswith("lab_") and b.key != "lab_next")
    assert any("Type your name above first" in w.value for w in at.warning)
    assert not any("judge" in d.value.columns for d in at.dataframe if "value" in d.value.columns)  # hidden
    at.text_input(key="label_who").input("ann").run()
    at.button(key="lab_groundedness_yes").click().run()
    assert current_sample(at) == expected[0] and "you said **yes**" in texts(at)
    assert "groundedness: 1 labelled / target 30+" in [p.proto.text for p in at.get("progress")]
    at.button(key="lab_answer_correctness_no").click().run()
    at.button(key="lab_context_precision_yes").click().run()
    assert not at.exception
    assert current_sample(at) == expected[1]  # every metric labelled: the next sample of the queue
    lines = [json.loads(ln) for ln in (run / "labels.jsonl").read_text().splitlines()]
    assert [(x["sample_id"], x["metric"], x["value"], x["who"]) for x in lines] == [
        (expected[0], "groundedness", 1.0, "ann"), (expected[0], "answer_correctness", 0.0, "ann"),
        (expected[0], "context_precision", 1.0, "ann")]
    assert all(x["when"].endswith("+00:00") for x in lines)
    shown = rd.load_run(run).trace(expected[0])
    assert shown is not None and {x["sample_hash"] for x in lines} == {shown.content_hash()}  # what was labelled
    at.button(key="lab_next").click().run()  # skip: nothing written
    assert current_sample(at) == expected[2] and len(read_labels(run)) == 3
    at.toggle(key="label_show_judges").set_value(True).run()
    shown = next(d.value for d in at.dataframe if "judge" in d.value.columns and "status" in d.value.columns)
    assert {"lexical", "embedding"} <= set(shown["judge"])
    # the name survives a visit to another page
    at.switch_page("ragdoctor/dashboard/pages/overview.py").run()
    at.switch_page("ragdoctor/dashboard/pages/label.py").run()
    assert at.text_input(key="label_who").value == "ann" and not at.exception


def test_a_name_the_label_store_refuses_is_said_on_the_page_and_nothing_is_written(run):
    at = app(str(run), "label")
    at.text_input(key="label_who").input("ann\tbob").run()
    at.button(key="lab_groundedness_yes").click().run()
    assert not at.exception and not (run / "labels.jsonl").exists()
    assert any("label not saved" in e.value and "who" in e.value and "control character" in e.value for e in at.error)
    at.text_input(key="label_who").input("ann").run()
    at.button(key="lab_groundedness_yes").click().run()
    assert len(read_labels(run)) == 1 and not at.error


def test_label_page_progress_and_calibrated_table(run):
    r = rd.load_run(run)
    order = queue(ld.scores_for(r, "groundedness"))
    add_labels(run, [Label(sample_id=s, metric="groundedness", value=float(i % 3 != 0), who="bob")
                     for i, s in enumerate(order[:34])])
    res = r.results
    measured = set(res[(res.metric == "groundedness") & (res.judge == "lexical") & (res.status == "ok")].sample_id)
    at = app(str(run), "label")
    assert not at.exception
    prog = [p.proto.text for p in at.get("progress")]
    assert "groundedness: 34 labelled / target 30+" in prog and "answer correctness: 0 labelled / target 30+" in prog
    table = next(d.value for d in at.dataframe if "PPI mean" in d.value.columns)
    rows = table.set_index("judge")
    n = len(measured & set(order[:34]))  # a label on a sample the judge did not measure cannot calibrate it
    assert n >= 30 and rows.loc["lexical", "labels"] == n and rows.loc["lexical", "PPI mean"] > 0
    overview = app(str(run))
    assert "Calibrated by human labels" in texts(overview)
    assert any("PPI mean" in d.value.columns for d in overview.dataframe)
    at.multiselect(key="label_metrics").set_value(["groundedness"]).run()
    assert current_sample(at) == order[34]  # labelled ones are skipped
    assert not any(b.key == "lab_answer_correctness_yes" for b in at.button)


def test_compare_page_shows_corrected_estimates_when_both_runs_have_labels(tmp_path):
    a, b = synthetic_run(tmp_path / "cmp-a", 60, seed=1), synthetic_run(tmp_path / "cmp-b", 60, seed=2)
    at = app(f"{b}\n{a}", "compare")
    assert any("Corrected estimates show when both runs have enough human labels" in i.value for i in at.info)
    for i, path in enumerate((a, b)):
        r = rd.load_run(path)
        add_labels(path, [Label(sample_id=s, metric="groundedness", value=float((j + i) % 2), who="ann")
                          for j, s in enumerate(r.sample_ids[:35])])
    at = app(f"{b}\n{a}", "compare")
    assert not at.exception
    ppi = next(d.value for d in at.dataframe if "ppi_a" in d.value.columns)
    assert set(ppi["metric"]) == {"groundedness"} and len(ppi) == 2 and ppi["ppi_delta"].notna().all()
    assert ppi["labels_a"].between(30, 35).all() and (ppi["ppi_ci_low_b"] <= ppi["ppi_b"]).all()


def test_a_sample_whose_answer_changed_since_it_was_labelled_comes_back_to_the_queue(run):
    r = rd.load_run(run)
    first = queue(ld.scores_for(r, "groundedness"))[0]
    trace = r.trace(first)
    assert trace is not None
    add_labels(run, [Label(sample_id=first, metric=m, value=1.0, who="ann", sample_hash=trace.content_hash())
                     for m in ld.LABEL_SET])
    prog = ld.progress(r, read_labels(run), list(ld.LABEL_SET), "groundedness")
    assert first in prog.done and first not in prog.order
    with open(run / "traces.jsonl", "a", encoding="utf-8") as fh:  # answered again: the labels judged the old answer
        fh.write(trace.model_copy(update={"answer": "Another answer."}).model_dump_json() + "\n")
    prog = ld.progress(rd.load_run(run), read_labels(run), list(ld.LABEL_SET), "groundedness")
    assert first not in prog.done and prog.order[0] == first and prog.counts["groundedness"] == 0


def test_the_page_and_the_cli_record_the_same_answer_for_a_label(run):
    """Both record the hash of the answer the evaluation judged (config.json's, when there is one): a sample answered
    again but not evaluated again is labelled as it was judged, so neither writer's label is stale while the other's
    counts."""
    from corpora.labels import sample_hash

    r = rd.load_run(run)
    sid = r.sample_ids[0]
    shown = ld.labelled_trace(r, sid)
    assert shown is not None and shown.content_hash() == sample_hash(run, sid)
