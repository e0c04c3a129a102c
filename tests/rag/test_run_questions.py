"""Answering a question set into a traces log (rag/run_questions.py): resume by question record, config and corpus."""
import pytest

from corpora.errors import InputError
from corpora.records import Question, Trace
from corpora.run_folder import RunFolder
from rag.run_questions import run_questions

QS = [Question(id="q1", question="What is LoRA?", reference="Adapters."), Question(id="q2", question="And KV?")]


def answerer(asked: list[str], outcome: str = "answered"):
    def answer(q: Question) -> Trace:
        asked.append(q.id)
        return Trace.of(q, contexts=[], answer="an answer", config_hash="c", outcome=outcome)
    return answer


def test_a_rerun_answers_only_what_changed(tmp_path):
    asked: list[str] = []
    out = tmp_path / "run" / "traces.jsonl"
    first = run_questions(answerer(asked), QS, out, config_hash="c", progress=False, salt="corpus")
    assert (first.new, first.resumed) == (2, 0) and first.traces[0].input_hash == QS[0].content_hash("corpus")
    assert run_questions(answerer(asked), QS, out, config_hash="c", progress=False, salt="corpus").resumed == 2
    run_questions(answerer(asked), QS, out, config_hash="other", progress=False, salt="corpus")  # new pipeline config
    assert asked == ["q1", "q2", "q1", "q2"]
    latest = RunFolder.of_traces(out).latest_traces()
    assert list(latest) == ["q1", "q2"] and len(RunFolder.of_traces(out).traces.read()) == 4  # superseded, kept


def test_a_failed_answer_is_asked_again(tmp_path):
    asked: list[str] = []
    out = tmp_path / "traces.jsonl"
    run_questions(answerer(asked, "error"), QS[:1], out, config_hash="c", progress=False)
    run_questions(answerer(asked), QS[:1], out, config_hash="c", progress=False)
    assert asked == ["q1", "q1"]


def test_two_questions_with_one_id_are_refused(tmp_path):
    with pytest.raises(InputError, match=r"^questions:2: field 'id': the id 'q1' is also question 1's"):
        run_questions(answerer([]), [QS[0], QS[0]], tmp_path / "t.jsonl", config_hash="c", progress=False)


def test_ctrl_c_with_answers_in_flight_keeps_them(tmp_path):
    """With --concurrency, the requests in flight finish anyway (their threads are joined): their answers are saved,
    the queued questions are not started, and the interrupt still ends the run."""
    import threading
    import time

    started = threading.Barrier(3)

    def answer(q: Question) -> Trace:
        if q.id != "boom":
            started.wait(timeout=5)  # both slow answers are in flight before the interrupt
            time.sleep(0.2)
        else:
            started.wait(timeout=5)
            raise KeyboardInterrupt
        return Trace.of(q, contexts=[], answer="an answer", config_hash="c")

    qs = [Question(id=i, question=f"Question {i}?") for i in ("slow1", "slow2", "boom", "queued")]
    out = tmp_path / "traces.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run_questions(answer, qs, out, config_hash="c", progress=False, concurrency=3)
    assert sorted(RunFolder.of_traces(out).latest_traces()) == ["slow1", "slow2"]
