"""The evaluation runner, its bad-input handling, resume, summary and the CI gate (no models: lexical + labels)."""
import json

import pandas as pd
import pytest

from corpora.records import MetricResult, Trace
from corpora.run_folder import RunFolder
from eval.adapters import load_traces
from eval.judges.labels import LabelsJudge
from eval.judges.lexical import LexicalScorer
from eval.judges.llm_claims import LLMJudge
from eval.judges.scorer import ScorerJudge
from eval.judging import evaluate
from rag.llm import FakeLLM, LLMError
from ragdoctor.cli import main

CTX = [{"id": "kv#0", "doc_id": "kv", "text": "The KV cache stores keys and values for every token. It grows with sequence length."},
       {"id": "fa#0", "doc_id": "fa", "text": "FlashAttention tiles the attention computation to avoid HBM traffic."}]


def rows():
    return [
        {"id": "good", "question": "What does the KV cache store?", "contexts": CTX,
         "answer": "The KV cache stores keys and values for every token [kv#0].",
         "reference": "It stores the keys and values of every token.", "relevant_ids": ["kv"]},
        {"id": "made-up", "question": "What does the KV cache store?", "contexts": CTX,
         "answer": "The KV cache stores optimizer momentum on the CPU.", "reference": "Keys and values.", "relevant_ids": ["kv"]},
        {"id": "refusal-right", "question": "What is the H100 price?", "contexts": CTX,
         "answer": "I don't know based on the provided documents.", "reference": "The provided documents do not contain the answer.",
         "relevant_ids": []},
        {"id": "ragas-shape", "user_input": "What tiles attention?", "retrieved_contexts": [CTX[1]["text"]],
         "response": "FlashAttention tiles the attention computation.", "reference": "FlashAttention."},
    ]


def write_jsonl(path, items):
    path.write_text("".join((i if isinstance(i, str) else json.dumps(i)) + "\n" for i in items), encoding="utf-8")
    return path


JUDGES = lambda: [ScorerJudge(LexicalScorer()), LabelsJudge()]  # noqa: E731
METRICS = ["groundedness", "context_precision", "answer_relevance", "context_recall", "answer_correctness", "recall@5"]


def test_scores_are_in_range_and_refusals_follow_the_rules(tmp_path):
    samples, errors = load_traces(write_jsonl(tmp_path / "in.jsonl", rows()))
    assert errors == [] and len(samples) == 4
    run = evaluate(samples, metrics=METRICS, judges=JUDGES(), run=tmp_path / "run", progress=False)
    by = {j.sample_id: j for j in run.judgements}
    g = by["good"].get("groundedness", "lexical")
    assert g.value == 1.0 and g.evidence["claims"][0]["chunk_id"] == "kv#0" and g.evidence["claims"][0]["sentence"]
    assert by["made-up"].get("groundedness").value == 0.0
    assert by["made-up"].get("groundedness").evidence["claims"][0]["verdict"] == "unsupported"
    r = by["refusal-right"]
    assert r.get("groundedness").value == 1.0 and r.get("groundedness").evidence["refusal"]
    assert r.get("answer_correctness").value == 1.0
    assert r.get("context_recall").status == "not_applicable"
    assert r.get("recall@5").status == "not_applicable"
    assert by["good"].get("recall@5").value == 1.0
    for j in run.judgements:
        for res in j.results:
            assert res.status != "ok" or 0.0 <= res.value <= 1.0
    df = pd.read_parquet(tmp_path / "run" / "results.parquet")
    assert set(df.columns) >= {"sample_id", "metric", "judge", "value", "status", "reason"}
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    row = next(m for m in summary["metrics"] if m["metric"] == "groundedness")
    assert row["n"] == 4 and row["ci_low"] <= row["mean"] <= row["ci_high"]


def test_bad_records_are_reported_one_line_and_the_rest_is_scored(tmp_path):
    path = tmp_path / "in.jsonl"
    good = rows()[:2]
    path.write_bytes(
        (json.dumps(good[0]) + "\n").encode() + b'{"id": "broken", "question": \n' + b'{"id": "noq", "answer": "x"}\n'
        + b'{"id": "latin", "question": "caf\xe9?"}\n' + json.dumps({**good[1], "contexts": "oops"}).encode() + b"\n"
        + json.dumps({"id": "empty", "question": "Q?", "contexts": [], "answer": ""}).encode() + b"\n"
        + json.dumps({"id": "huge", "question": "Q?", "contexts": CTX, "answer": "word " * 250_000}).encode() + b"\n")
    samples, errors = load_traces(path)
    msgs = [str(e) for e in errors]
    assert [s.sample_id for s in samples] == ["good", "empty", "huge"]
    assert any(":2: malformed JSON" in m for m in msgs)
    assert any(":3: field 'question': missing required field" in m for m in msgs)
    assert any(":4: not valid UTF-8" in m for m in msgs)
    assert any(":5: field 'contexts': must be a list" in m for m in msgs)
    assert all("\n" not in m and str(path) in m for m in msgs)
    run = evaluate(samples, metrics=METRICS, judges=JUDGES(), run=tmp_path / "run", input_errors=errors, progress=False)
    by = {j.sample_id: j for j in run.judgements}
    assert by["good"].get("groundedness").value == 1.0
    empty = by["empty"].get("groundedness")  # no contexts in the record: unmeasured, never a measured 0
    assert empty.status == "unmeasured" and empty.reason == "no contexts in the input record"
    assert by["empty"].get("context_precision").status == "unmeasured"
    assert by["empty"].get("answer_relevance").reason == "empty answer"
    huge = by["huge"].get("groundedness")
    assert huge.status == "unmeasured" and "answer too long" in huge.reason
    assert len(run.summary["input_errors"]) == 4


class ExplodingJudge:
    name, family, config_id = "boom", "test", "boom:v1"

    def supports(self, metric):
        return metric == "groundedness"

    def judge(self, metric, samples):
        raise ValueError("judge returned garbage: '}}{'")


class GarbageJudge(ExplodingJudge):
    name, config_id = "garbage", "garbage:v1"

    def judge(self, metric, samples):
        return [MetricResult.unmeasured(metric, self.name, "judge output unparseable") if "made" in s.sample_id
                else MetricResult.ok(metric, self.name, 0.5) for s in samples]


def test_judge_failures_become_unmeasured_not_crashes(tmp_path):
    samples, _ = load_traces(write_jsonl(tmp_path / "in.jsonl", rows()))
    run = evaluate(samples, metrics=["groundedness"], judges=[ExplodingJudge(), GarbageJudge(), ScorerJudge(LexicalScorer())],
                   run=tmp_path / "run", progress=False)
    for j in run.judgements:
        boom = j.get("groundedness", "boom")
        assert boom.status == "unmeasured" and boom.reason.startswith("judge failed: ValueError: judge returned garbage")
        assert j.get("groundedness", "lexical").status == "ok"
    assert {j.sample_id: j.get("groundedness", "garbage").status for j in run.judgements}["made-up"] == "unmeasured"
    boom_row = next(m for m in run.summary["metrics"] if m["judge"] == "boom")
    assert boom_row["n"] == 0 and boom_row["n_unmeasured"] == 4


class Counted(ExplodingJudge):
    """Raises whenever the batch holds ``poison`` (every batch when ``poison`` is None); records each call's ids."""
    name, config_id = "counted", "counted:v1"

    def __init__(self, poison=None):
        self.poison, self.calls = poison, []

    def judge(self, metric, samples):
        self.calls.append([s.sample_id for s in samples])
        if self.poison is None or any(s.sample_id == self.poison for s in samples):
            raise ValueError(f"cannot judge {self.poison or 'anything'}")
        return [MetricResult.ok(metric, self.name, 0.5) for _ in samples]


def test_a_sample_that_makes_its_judge_raise_leaves_the_rest_of_its_batch_measured(tmp_path):
    samples, _ = load_traces(write_jsonl(tmp_path / "in.jsonl", rows()))
    judge = Counted(poison="made-up")
    run = evaluate(samples, metrics=["groundedness"], judges=[judge], run=tmp_path / "run", batch_size=4,
                   progress=False)
    got = {j.sample_id: j.get("groundedness", "counted") for j in run.judgements}
    assert got["made-up"].reason == "judge failed: ValueError: cannot judge made-up"
    assert {sid: r.value for sid, r in got.items() if sid != "made-up"} == {"good": 0.5, "refusal-right": 0.5,
                                                                             "ragas-shape": 0.5}
    assert len(judge.calls[0]) == 4 and all(len(c) == 1 for c in judge.calls[1:]) and len(judge.calls) == 5


def test_a_judge_that_fails_on_every_sample_is_not_asked_about_each_of_a_big_batch(tmp_path):
    samples, _ = load_traces(write_jsonl(tmp_path / "in.jsonl", rows()))
    judge = Counted()
    run = evaluate(samples, metrics=["groundedness"], judges=[judge], run=tmp_path / "run", batch_size=4,
                   progress=False)
    assert [len(c) for c in judge.calls] == [4, 1, 1]  # the batch, then two alone failing as it did: the judge
    assert {j.get("groundedness", "counted").reason for j in run.judgements} == {
        "judge failed: ValueError: cannot judge anything"}
    assert run.summary["metrics"][0]["n_unmeasured"] == 4


def test_killed_run_resumes_without_judging_twice(tmp_path):
    samples, _ = load_traces(write_jsonl(tmp_path / "in.jsonl", rows()))
    run_dir = tmp_path / "run"
    evaluate(samples[:2], metrics=METRICS, judges=JUDGES(), run=run_dir, batch_size=1, progress=False)
    log = run_dir / "results.jsonl"
    log.write_bytes(log.read_bytes() + b'{"sample_id": "refusal-right", "resu')  # killed mid-write
    calls = []

    class Counting(ScorerJudge):
        def judge(self, metric, batch):
            calls.extend(s.sample_id for s in batch)
            return super().judge(metric, batch)

    run = evaluate(samples, metrics=METRICS, judges=[Counting(LexicalScorer()), LabelsJudge()], run=run_dir,
                   progress=False)
    assert run.resumed == 2 and run.new == 2
    assert set(calls) == {"refusal-right", "ragas-shape"}
    assert sorted(j.sample_id for j in RunFolder(run_dir).judgements()) == sorted(s.sample_id for s in samples)



class DownLLM(FakeLLM):
    """Says every statement is supported, or, while ``down``, fails as a server answering 500 does."""

    def __init__(self):
        super().__init__({"": "SUPPORTED"})
        self.down = True

    def chat(self, messages, **kw):
        if self.down:
            raise LLMError("HTTP 500: InternalServerError (after 1 retry)")
        return super().chat(messages, **kw)


class FailsWhileDown(ExplodingJudge):
    name, config_id = "flaky", "flaky:v1"
    down = True

    def judge(self, metric, samples):
        if self.down and any(s.sample_id == "refusal-right" for s in samples):
            raise TimeoutError("the judge's model did not load")
        return [MetricResult.ok(metric, self.name, 0.5) for _ in samples]


def test_a_rerun_judges_again_what_a_failed_judge_left_unmeasured_and_keeps_honest_unmeasured(tmp_path, caplog):
    samples, _ = load_traces(write_jsonl(tmp_path / "in.jsonl", rows()))
    llm, flaky = DownLLM(), FailsWhileDown()
    judges = [LLMJudge(llm, cache=False), flaky, GarbageJudge()]
    run_dir = tmp_path / "run"
    first = evaluate(samples, metrics=["groundedness"], judges=judges, run=run_dir, batch_size=1, progress=False)
    assert first.new == 4 and first.retried == 0
    assert [j.sample_id for j in first.judgements if not j.get("groundedness", "flaky").measured] == ["refusal-right"]
    assert {j.sample_id: j for j in first.judgements}["refusal-right"].get("groundedness", "flaky").reason == \
        "judge failed: TimeoutError: the judge's model did not load"
    llm_failed = [j.sample_id for j in first.judgements if (j.get("groundedness", "llm").reason or "").startswith(
        "judge call failed: HTTP 500")]
    assert llm_failed == ["good", "made-up", "ragas-shape"]  # the refusal needs no call
    llm.down = flaky.down = False  # the server answers again
    second = evaluate(samples, metrics=["groundedness"], judges=judges, run=run_dir, batch_size=1, progress=False)
    assert (second.new, second.resumed, second.retried) == (4, 0, 4)
    assert "judging again 4 sample(s) a judge failed on last time" in caplog.text
    assert all(j.get("groundedness", "flaky").value == 0.5 for j in second.judgements)
    assert any(j.get("groundedness", "llm").measured for j in second.judgements) and llm.calls
    assert [j.get("groundedness", "llm").model_dump(exclude={"seconds"}) for j in RunFolder(run_dir).judgements()] == \
        [j.get("groundedness", "llm").model_dump(exclude={"seconds"}) for j in second.judgements]  # the latest lines
    made_up = {j.sample_id: j for j in second.judgements}["made-up"].get("groundedness", "garbage")
    assert made_up.reason == "judge output unparseable"  # an honest unmeasured result: kept on the next rerun
    calls = len(llm.calls)
    third = evaluate(samples, metrics=["groundedness"], judges=judges, run=run_dir, batch_size=1, progress=False)
    assert (third.new, third.resumed, third.retried) == (0, 4, 0) and len(llm.calls) == calls


def test_eval_sample_rejects_nan():
    with pytest.raises(ValueError):
        MetricResult(metric="m", judge="j", value=float("nan"))
    with pytest.raises(ValueError):
        MetricResult(metric="m", judge="j", value=1.5)
    assert Trace(sample_id="x", question="q").retrieved_doc_ids == []


def test_correctness_reads_a_short_reference_with_its_question_but_never_the_question_alone():
    """A question asserts nothing: a judge fooled by topical overlap must not find an answer's claim 'supported' by
    the question alone; a one-phrase reference ("Stage 2.") is judged with the question leading it."""
    from eval.judges.base import Support

    question = "Which ZeRO stage is the first to partition gradients?"

    class Topical:  # 'supports' a claim whenever the premise shares a content word with it (a bad judge, on purpose)
        name, family, support_threshold, relevance_threshold = "topical", "nli", 0.5, 0.5
        premises: list[str] = []

        def support(self, pairs):
            self.premises += [p for p, _ in pairs]
            return [Support(float(bool({w for w in c.lower().split() if len(w) > 4} & set(p.lower().split()))), None)
                    for p, c in pairs]

        def relevance(self, pairs):
            return [0.0] * len(pairs)

    scorer = Topical()
    s = Trace(sample_id="z", question=question, answer="ZeRO offload moves optimizer partition states to the CPU.",
                   reference="Stage 2.")
    (r,) = ScorerJudge(scorer).judge("answer_correctness", [s])
    assert question not in scorer.premises  # never a premise on its own
    assert all(p.startswith(question) for p in scorer.premises)
    assert {p for p in scorer.premises} == {f"{question} Stage 2.", f"{question} {s.answer}"}


def test_nli_threshold_reaches_the_judge_and_its_config_id():
    from eval.judges.registry import JudgeOptions, make_judge
    judge = make_judge("nli", JudgeOptions(nli_threshold=0.7))
    assert judge.scorer.support_threshold == 0.7 and judge.config_id.endswith("@t=0.7")
    assert make_judge("nli", JudgeOptions()).scorer.support_threshold == 0.5


@pytest.mark.parametrize("value", ["2", "0", "abc"])
def test_nli_threshold_outside_the_unit_interval_is_a_usage_error(value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["eval", "missing.jsonl", "--nli-threshold", value])
    assert exc.value.code == 2 and "--nli-threshold" in capsys.readouterr().err


def test_a_long_answer_leaves_the_metrics_that_do_not_read_it_measured():
    from corpora.records import Chunk, Trace
    from eval.judging import MAX_ANSWER_CHARS, precheck

    t = Trace(sample_id="s", question="Q?", answer="word " * (MAX_ANSWER_CHARS // 4), reference="R.",
              contexts=[Chunk(chunk_id="c#0", doc_id="c", rank=1, text="Text.")])
    assert precheck(t, "groundedness", "j").reason.startswith("answer too long to judge")
    assert precheck(t, "context_precision", "j") is None and precheck(t, "context_recall", "j") is None
