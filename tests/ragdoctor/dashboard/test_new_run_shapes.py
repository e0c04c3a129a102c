"""Audit: the pages on run folders of shapes recent changes made possible. A run evaluated on groundedness alone
(diagnose calls its answers unmeasured: never a failure, never ok), traces imported from OpenTelemetry spans
(metadata answer_from / contexts_missing, chunks without a score), context precision over blank chunks, metrics
unmeasured on every sample, an evaluation stopped before its first result, and long or markup-laden user text."""
from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from corpora.jsonl import append_json_line
from corpora.records import Chunk
from corpora.run_folder import RunFolder
from diagnostics.report import diagnose
from eval.judges.lexical import LexicalScorer
from eval.judges.scorer import ScorerJudge
from eval.judging import evaluate
from ragdoctor.dashboard import compare_data as cd
from ragdoctor.dashboard import data as rd
from ragdoctor.dashboard import text
from tests.ragdoctor.dashboard.runs import SAMPLES, make_trace
from tests.ragdoctor.dashboard.test_honest_pages import body_of
from tests.ragdoctor.dashboard.test_pages import app, shown, texts

PAGES = (None, "samples", "disagreements", "retrieval", "label")
ALL = ["groundedness", "answer_correctness", "context_precision", "answer_relevance"]
NOT_EVALUATED = "answer correctness was not evaluated in this run: whether the answer is right is unknown"
ANSWER_FROM = "the root span has no output.value: the answer is the output message of LLM span e2e2e2e2, the last to end"
MISSING = "the documents of RETRIEVER span c1c1c1c1 are incomplete: it dropped 3 of its attributes"


def judged_run(run_dir: Path, traces: list, metrics: list[str], diagnosed: bool = True) -> Path:
    """``traces`` evaluated by the lexical judge on ``metrics`` into ``run_dir`` (and diagnosed), as the CLI does."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for t in traces:
        append_json_line(run_dir / "traces.jsonl", t)
    ev = evaluate(traces, metrics=metrics, judges=[ScorerJudge(LexicalScorer())], run=run_dir, progress=False)
    if diagnosed:
        RunFolder(run_dir).write_diagnoses(*diagnose(ev.judgements))
    return run_dir


def otel_traces(missing: set[str]) -> list:
    """The fixture's samples as an OpenTelemetry import gives them: the answer from the last LLM span, no retriever
    scores or signals, and for ``missing`` contexts unmeasured with the reason."""
    out = []
    for sid, spec in SAMPLES.items():
        t = make_trace(sid, spec)
        meta = {"answer_from": ANSWER_FROM}
        if sid in missing:
            t = t.model_copy(update={"contexts": None, "candidates": []})
            meta["contexts_missing"] = MISSING
        else:
            t = t.model_copy(update={"contexts": [c.model_copy(update={"score": None, "signals": {}})
                                                  for c in t.contexts], "candidates": []})
        out.append(t.model_copy(update={"metadata": meta}))
    return out


@pytest.fixture(scope="module")
def grounded_only(tmp_path_factory) -> Path:
    return judged_run(tmp_path_factory.mktemp("shapes") / "grounded-only",
                      [make_trace(sid, spec) for sid, spec in SAMPLES.items()], ["groundedness"])


# --- 1. groundedness alone: unmeasured, with its reason, neither a failure nor ok ------------------------------------

def test_a_groundedness_only_run_says_its_answers_are_unmeasured_and_why(grounded_only):
    run = rd.load_run(grounded_only)
    assert run.diagnosis("ok-block").category == "unmeasured" and run.diagnosis("ok-block").rule == NOT_EVALUATED
    cats = rd.category_counts(run).set_index("category")
    assert f"{NOT_EVALUATED} (3)" in cats.loc["unmeasured", "reasons"]
    assert "the pipeline failed for this sample (1)" in cats.loc["unmeasured", "reasons"]
    assert "ok" not in cats.index  # a right-looking answer is not called ok when correctness was never asked
    for page in PAGES:
        app(str(grounded_only), page)  # no exception on any page
    body = texts(app(str(grounded_only)))
    assert "4 samples unmeasured: not failures, and not ok either" in body and NOT_EVALUATED in body
    at = app(str(grounded_only), "samples")
    at.selectbox(key="samples_pick").set_value("ok-block").run()
    assert f"Rule that fired:** {text.html(NOT_EVALUATED)}" in texts(at)  # HTML-escaped: colons as &#58;


def test_ok_then_unmeasured_is_no_regression_when_comparing_runs(runs, grounded_only):
    full = rd.load_run(runs[0])
    changed = cd.changed_samples(full, rd.load_run(grounded_only)).set_index("sample_id")
    assert full.diagnosis("ok-lora").category == "ok"
    assert changed.loc["ok-lora", "category_b"] == "unmeasured" and changed.loc["ok-lora", "change"] == "unmeasured"
    assert "regression" not in set(changed["change"]) and "fix" not in set(changed["change"])
    back = cd.changed_samples(rd.load_run(grounded_only), full).set_index("sample_id")
    assert back.loc["ok-lora", "change"] == "unmeasured"  # unmeasured -> ok is no fix either
    body = texts(app(f"{grounded_only}\n{runs[0]}", "compare"))
    assert "regression: 0" in body and "unmeasured: " in body and "one run could not tell" in body


# --- 2. traces imported from OpenTelemetry spans ---------------------------------------------------------------------

def test_an_otel_import_shows_where_the_answer_came_from_and_why_contexts_are_unknown(tmp_path):
    run_dir = judged_run(tmp_path / "otel", otel_traces({"miss-lora", "cut-ring"}), ALL)
    for page in PAGES:
        app(str(run_dir), page)
    at = app(str(run_dir), "samples")
    at.selectbox(key="samples_pick").set_value("ok-lora").run()
    body = body_of(at)
    assert f"Where the answer comes from: {ANSWER_FROM}" in body
    assert "doc_id: lora · score: not recorded" in body and "None" not in " ".join(shown(c.value) for c in at.caption)
    at.selectbox(key="samples_pick").set_value("miss-lora").run()
    body = body_of(at)
    assert f"the record does not say what was retrieved (contexts null): {MISSING}" in body
    assert "Retrieval cannot be judged for this sample, as eval's retrieval metrics leave it out (unmeasured: no " \
           f"contexts in the input record: {MISSING})" in body and "not retrieved**" not in body
    # the retrieval page counts the labelled questions it leaves out, with the reason
    body = texts(app(str(run_dir), "retrieval"))
    assert "Recall@k (4 labelled questions measured, 2 left out;" in body
    assert "Left out of everything below, as eval's retrieval metrics leave them out: 2 questions of 6 with relevance " \
           "labels. They count neither as retrieved nor as missed." in body
    assert f"2 questions unmeasured: no contexts in the input record: {MISSING}" in body


def test_labelled_questions_whose_retrieval_is_unknown_are_not_called_unlabelled(tmp_path):
    run_dir = judged_run(tmp_path / "otel-none", otel_traces(set(SAMPLES)), ALL)
    body = texts(app(str(run_dir), "retrieval"))
    assert "No question in this run has relevance labels" not in body
    assert "Recall cannot be measured: 6 questions with relevance labels, and eval's retrieval metrics leave every " \
           "one out" in body
    assert f"6 questions unmeasured: no contexts in the input record: {MISSING}" in body


# --- 4. context precision over blank chunks: verdicts by chunk id ---------------------------------------------------

def test_blank_chunks_get_no_verdict_and_the_others_keep_their_own(tmp_path):
    t = make_trace("s1", SAMPLES["ok-lora"])
    lora, noise = t.contexts
    blank = Chunk(chunk_id="blank#0", doc_id="blank", rank=1, text="   ")
    contexts = [blank, lora.model_copy(update={"rank": 2}), noise.model_copy(update={"rank": 3})]
    run_dir = judged_run(tmp_path / "blank", [t.model_copy(update={"contexts": contexts})], ALL)
    ev = rd.load_run(run_dir).judgement("s1").results
    cp = next(r for r in ev if r.metric == "context_precision" and r.judge == "lexical")
    assert cp.evidence["blank_chunks"] == ["blank#0"] and "left out of the ranking" in cp.evidence["note"]
    chunks = {c["chunk_id"]: c for c in rd.load_run(run_dir).detail("s1")["chunks"]}
    assert chunks["blank#0"]["context_precision"] == {} and chunks["blank#0"]["precision_blank"] == ["lexical"]
    assert chunks["lora#0"]["context_precision"] == {"lexical": True}  # not shifted onto the blank chunk's rank
    assert chunks["noise#0"]["context_precision"] == {"lexical": False} and not chunks["lora#0"]["precision_blank"]
    at = app(str(run_dir), "samples")
    labels = [shown(e.label) for e in at.expander]
    assert any(lb.startswith("#1 · blank#0") and "blank: no precision verdict" in lb and "precision verdict:" not in lb
               for lb in labels), labels
    assert any(lb.startswith("#2 · lora#0") and "lexical=relevant" in lb for lb in labels), labels
    assert any(lb.startswith("#3 · noise#0") and "lexical=irrelevant" in lb for lb in labels), labels
    assert "blank: this chunk has no text" in texts(at)


# --- 5. metrics unmeasured on every sample; an evaluation stopped before its first result ---------------------------

def test_metrics_unmeasured_on_every_sample_open_every_page(tmp_path):
    traces = [make_trace(sid, spec).model_copy(update={"contexts": None, "candidates": [], "reference": None})
              for sid, spec in SAMPLES.items()]
    run_dir = judged_run(tmp_path / "unmeasured", traces, ALL)
    for page in PAGES:
        app(str(run_dir), page)
    table = rd.metrics_table(rd.load_run(run_dir)).set_index("metric")
    assert table.loc["groundedness", "n"] == 0 and table.loc["groundedness", "n_unmeasured"] == 7
    body = texts(app(str(run_dir)))
    assert "results could not be measured" in body and "Every applicable result" not in body
    assert "no contexts in the input record" in " ".join(map(str, app(str(run_dir)).dataframe[-1].value["reason"]))


def test_an_evaluation_stopped_before_its_first_result(tmp_path):
    run_dir = judged_run(tmp_path / "stopped", [make_trace(sid, spec) for sid, spec in SAMPLES.items()],
                         ["groundedness", "answer_correctness"], diagnosed=False)
    for name in ("summary.json", "results.parquet"):
        (run_dir / name).unlink(missing_ok=True)
    (run_dir / "results.jsonl").write_text("")
    for page in PAGES:
        app(str(run_dir), page)
    body = texts(app(str(run_dir)))
    assert "its evaluation stopped before the first result: none of its 7 samples has been judged" in body
    assert "Gate passed" not in body and "Gate FAILED" not in body
    bare = shutil.copytree(run_dir, tmp_path / "stopped-bare")  # records judged from a file: no traces.jsonl
    (bare / "traces.jsonl").unlink()
    status = rd.evaluation_status(rd.load_run(bare))
    assert status["total"] == 7 and "none of its 7 samples" in status["note"]
    body = texts(app(str(bare)))
    assert "none of its 7 samples has been judged" in body and "none of its 0 samples" not in body
    at = app(str(bare), "label")
    assert "This run has no samples to label yet." in texts(at) and "Every sample of this run is labelled" not in \
        texts(at)


def test_skipping_every_sample_is_not_labelling_every_sample(runs):
    at = app(str(runs[0]), "label")
    for _ in SAMPLES:
        at.button(key="lab_next").click().run()
    body = texts(at)
    assert "Every sample of this run is labelled" not in body
    assert "No sample left to label in this session: 0 of 7 labelled" in body and "you skipped the rest" in body


# --- 6. long and markup-laden user text shows as text ---------------------------------------------------------------

QUESTION = "Is <script>alert(1)</script> **bold** $x$ and $y$ | a | b | <b>ok</b>?"


def test_long_answers_and_markup_in_user_text_show_as_text(tmp_path):
    t = make_trace("s1", SAMPLES["ok-lora"])
    answer = t.answer + " " + "Also $5 and $10 | x | **y** <b>z</b> # h. " * 1200  # ~50k characters
    assert len(answer) > 48_000
    t = t.model_copy(update={"question": QUESTION, "answer": answer, "reference": t.reference + " $x$ | **r**"})
    run_dir = judged_run(tmp_path / "hostile", [t], ALL)
    for page in PAGES:
        start = time.perf_counter()
        at = app(str(run_dir), page)
        assert time.perf_counter() - start < 30, page
        raw = [re.sub(r"(`+).*?\1", "", v) for v in [*(m.value for m in at.markdown), *(c.value for c in at.caption),
                                                    *(e.label for e in at.expander)]]
        for bad in ("<script", "<b>", "$x$", "$5", "**bold", "**y", "| a |"):  # never unescaped markup
            assert not any(bad in v for v in raw), (page, bad, [v[:200] for v in raw if bad in v])
    at = app(str(run_dir), "samples")
    html = "\n".join(m.value for m in at.markdown)
    assert "&lt;script&gt;alert&#40;1&#41;&lt;/script&gt;" in html and "&#36;x&#36;" in html and "&#124; a" in html


# --- the retrieval page leaves out what eval's retrieval metrics leave out -------------------------------------------

def test_the_retrieval_page_counts_and_names_what_it_leaves_out(tmp_path):
    """The header counted every labelled question with contexts (a trace without doc ids among them, though the curve
    leaves it out) and the rank chart called that one "not retrieved"; a question blocked before retrieval was called
    unrecorded. The page says now how many it leaves out and why, in eval's words, and counts what the curve counts."""
    from tests.ragdoctor.dashboard.test_data import LEFT_OUT, left_out_traces

    run_dir = tmp_path / "left-out"
    run_dir.mkdir()
    for t in left_out_traces():
        append_json_line(run_dir / "traces.jsonl", t)
    at = app(str(run_dir), "retrieval")
    body = texts(at)
    assert "Recall@k (2 labelled questions measured, 4 left out; k counts distinct documents)" in body
    assert "Left out of everything below, as eval's retrieval metrics leave them out: 4 questions of 6 with " \
           "relevance labels. They count neither as retrieved nor as missed." in body
    for why in LEFT_OUT.values():
        assert f"1 question {why}" in body
    assert "whose record does not say what was retrieved" not in body  # the blocked one is not "unrecorded"
    table = next(d.value for d in at.dataframe if "reason" in d.value.columns)
    assert dict(zip(table["sample ids"], table["left out"])) == {
        sid: why.split(":")[0] for sid, why in LEFT_OUT.items()}
    assert {m.label: m.value for m in at.metric}["never retrieved (top-k and candidates)"] == "1"
    assert {m.label: m.value for m in at.metric}["left out (not measured, see above)"] == "4"
    worst = next(d.value for d in at.dataframe if "first_relevant_rank" in d.value.columns)
    assert set(worst["sample_id"]) == {"hit", "miss"}


def test_the_retrieval_page_says_why_when_every_labelled_question_is_left_out(tmp_path):
    from corpora.records import Chunk, Trace

    run_dir = tmp_path / "blind"
    run_dir.mkdir()
    append_json_line(run_dir / "traces.jsonl", Trace(
        sample_id="blind", question="q?", answer="a", relevant_doc_ids=["kv"],
        contexts=[Chunk(chunk_id="c17", rank=1, text="KV.")]))
    body = texts(app(str(run_dir), "retrieval"))
    assert "Recall cannot be measured: 1 question with relevance labels, and eval's retrieval metrics leave it " \
           "out (neither retrieved nor missed: why, below)." in body
    assert "1 question unmeasured: the contexts carry no doc_id to compare with the relevant ids" in body
    assert "Rank of the first relevant chunk" not in body and "not retrieved" not in body


def test_the_samples_page_names_what_retrieval_leaves_out_and_the_drilldown_judges_no_document(tmp_path):
    """The drill-down marked each relevant document of a trace whose contexts carry no doc_id "not retrieved"; the
    Samples table showed a blank first relevant rank alike for a miss, a left-out trace and an unlabelled one. The
    table gives eval's reason next to the rank now, and the drill-down says the retrieval cannot be judged, and why."""
    from tests.ragdoctor.dashboard.test_data import LEFT_OUT, left_out_traces

    run_dir = tmp_path / "left-out"
    run_dir.mkdir()
    for t in left_out_traces():
        append_json_line(run_dir / "traces.jsonl", t)
    at = app(str(run_dir), "samples")
    table = next(d.value for d in at.dataframe if "first_relevant_rank" in d.value.columns).set_index("sample_id")
    assert table["retrieval_left_out"].dropna().to_dict() == LEFT_OUT
    assert list(table.columns).index("retrieval_left_out") == list(table.columns).index("first_relevant_rank") + 1
    assert not table.loc["plain", "labelled"] and table.loc["miss", "labelled"]
    for sid, why in LEFT_OUT.items():
        at.selectbox(key="samples_pick").set_value(sid).run()
        body = body_of(at)
        assert f"Retrieval cannot be judged for this sample, as eval's retrieval metrics leave it out ({why})" in body
        assert "not retrieved**" not in body and "not a relevant document" not in body, sid
    at.selectbox(key="samples_pick").set_value("blind").run()
    assert "- `kv`: not judged" in body_of(at)
    at.selectbox(key="samples_pick").set_value("blocked").run()
    assert "blocked by a guardrail before retrieval: nothing was retrieved" in body_of(at)
    at.selectbox(key="samples_pick").set_value("miss").run()
    assert "- `kv`: **not retrieved**" in body_of(at)  # measured: a miss is still a miss


def test_the_drilldown_shows_graded_and_chunk_labels_as_eval_reads_them(tmp_path):
    """The drill-down page listed relevant_doc_ids only, matched by document: qrels grades were not shown and a label
    naming a chunk was "not retrieved" although eval found it. It shows eval's reading now: each relevant label with
    its grade, found at its rank, chunk labels matched per chunk, grade-0 labels judged not relevant."""
    from tests.ragdoctor.dashboard.test_data import eval_labelled_traces

    run_dir = tmp_path / "graded"
    run_dir.mkdir()
    for t in eval_labelled_traces():
        append_json_line(run_dir / "traces.jsonl", t)
    at = app(str(run_dir), "samples")
    at.selectbox(key="samples_pick").set_value("qrels").run()
    body = body_of(at)
    assert "- `kv` (grade 2): retrieved at rank 2" in body and "- `lora` (grade 1): retrieved at rank 5" in body
    assert "Judged not relevant (grade 0 or below): `noise`" in body and "`noise` (grade" not in body
    for sid, grade in (("chunk", ""), ("chunk0", " (grade 1)")):  # chunk0's qrels grade its guide document 0
        at.selectbox(key="samples_pick").set_value(sid).run()
        body = body_of(at)
        assert f"- `guide#2`{grade}: retrieved at rank 2" in body and "not retrieved**" not in body, sid
        assert ("Judged not relevant (grade 0 or below): `guide`" in body) == (sid == "chunk0")
        assert "The labels name chunks: matched chunk by chunk" in body
        assert re.search(r"#2 · guide#2 · .*relevant chunk", body) and "#1 · guide#0 · not a relevant chunk" in body
