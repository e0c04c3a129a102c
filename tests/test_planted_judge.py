"""The planted conflicts of the bundled corpus, judged by the real default judge (no fake): an answer copied from the
outdated document is grounded in what was retrieved, yet wrong against the reference, so it must be diagnosed
grounded_yet_hallucinated, and its answer correctness (a changed number, a flipped yes/no, a swapped format) must be
below 0.5. Traces come from the real pipeline (real retrieval over the bundled corpus) with a scripted generator that
answers with the outdated document's own sentence."""
import pytest

from corpora.bundled import bundled_documents, bundled_questions
from diagnostics.classify import classify
from eval.judges.labels import LabelsJudge
from eval.judges.registry import JudgeOptions, make_judge
from eval.judging import judge_batch
from rag.config import PipelineConfig
from rag.llm import FakeLLM
from rag.session import open_pipeline

pytestmark = pytest.mark.model

QUESTIONS = {q.id: q for q in bundled_questions()}
DOCS = {d.id: d for d in bundled_documents()}
# per planted conflict: words of the outdated document's sentence that states the stale fact
STALE = {"qa10": "spans two nodes", "qa20": "32 tokens", "qa27": "does not support head dimension 256",
         "qb33": "is 64", "qb34": "static batching", "qb35": "use E5M2 for forward-pass"}


def stale_sentence(qid: str) -> str:
    from eval.claims import split_sentences

    doc = DOCS[QUESTIONS[qid].metadata["outdated_doc_id"]]
    return next(s for s in split_sentences(doc.text) if STALE[qid] in s)


def test_every_planted_conflict_is_listed():
    conflicts = {q.id for q in QUESTIONS.values() if q.metadata.get("kind") == "conflict"}
    assert conflicts == set(STALE)


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    llm = FakeLLM(responses={})
    judge = make_judge("nli", JudgeOptions())
    out = {}
    with open_pipeline(PipelineConfig(index_dir=str(tmp_path_factory.mktemp("idx") / "i")), llm=llm) as p:
        for qid in STALE:
            llm.responses = {"Question:": stale_sentence(qid)}
            q = QUESTIONS[qid]
            sample = p.answer(q.question, q)
            [j] = judge_batch([sample], ["groundedness", "answer_correctness", "context_precision"],
                              [judge, LabelsJudge()])
            out[qid] = j
    return out


@pytest.mark.parametrize("qid", sorted(STALE))
def test_stale_answer_is_wrong_against_the_reference(judged, qid):
    j = judged[qid]
    corr = next(r for r in j.results if r.metric == "answer_correctness" and r.judge == "nli")
    assert corr.measured and corr.value < 0.5, (qid, corr.value, corr.evidence.get("answer_claims"))


@pytest.mark.parametrize("qid", sorted(STALE))
def test_stale_answer_from_a_retrieved_outdated_document_is_grounded_yet_hallucinated(judged, qid):
    j = judged[qid]
    outdated = QUESTIONS[qid].metadata["outdated_doc_id"]
    if not any(c.doc_id == outdated for c in j.trace.chunks):
        pytest.fail(f"{qid}: the outdated document {outdated} was not retrieved, so this case tests nothing")
    d = classify(j)
    assert d.category == "grounded_yet_hallucinated", (qid, d.category, d.rule)


# answers that state the opposite of a yes/no reference without opening with a yes or no: the question before the
# answer read as if the answer said it (answer correctness 1.0 for each, METRICS_VERSION 26)
OPPOSITES = [
    ("Is FlashAttention exact?", "Yes, it is exact.", "FlashAttention is an approximate attention method."),
    ("Does LoRA freeze the base weights?", "Yes, the base weights are frozen.", "LoRA updates all the base weights."),
    ("Can QLoRA train a 65B model on one 48GB GPU?", "Yes, QLoRA fits a 65B model on a single 48GB GPU.",
     "QLoRA needs several GPUs for a 65B model."),
]


def test_an_answer_stating_the_opposite_of_a_yes_no_reference_is_wrong():
    from corpora.records import Trace

    judge = make_judge("nli", JudgeOptions())
    traces = [Trace(sample_id=f"s{i}", question=q, answer=a, reference=ref, contexts=[])
              for i, (q, ref, a) in enumerate(OPPOSITES)]
    for t, r in zip(traces, judge.judge("answer_correctness", traces)):
        assert r.measured and r.value < 0.5, (t.question, t.answer, r.evidence.get("reference_claims"))
