"""The bundled corpus's planted trouble is caught by the right diagnostic category. Traces are built by the real
pipeline (real retrieval over the bundled corpus, MiniLM) with a scripted fake generator; the judge is a deterministic
fake that checks numbers exactly (a model would be needed otherwise)."""
import re

import pytest

from corpora.bundled import bundled_documents, bundled_questions
from diagnostics.classify import classify
from eval.judges.base import Support
from eval.judges.labels import LabelsJudge
from eval.judges.scorer import ScorerJudge
from eval.judging import judge_batch
from eval.tokens import content_tokens
from rag.config import PipelineConfig
from rag.llm import FakeLLM
from rag.prompt import REFUSAL
from rag.session import open_pipeline

pytestmark = pytest.mark.model
_NUM = re.compile(r"\d+(?:\.\d+)?")


class ExactFactsScorer:
    """Supported when most content words match and every number of the hypothesis is in the premise."""

    name, family, support_threshold, relevance_threshold = "nli", "fake", 0.5, 0.3

    def support(self, pairs):
        out = []
        for premise, hyp in pairs:
            words = content_tokens(hyp)
            overlap = sum(w in set(content_tokens(premise)) for w in words) / max(1, len(words))
            numbers_ok = set(_NUM.findall(hyp)) <= set(_NUM.findall(premise))
            out.append(Support(1.0 if overlap >= 0.5 and numbers_ok else 0.0))
        return out

    def relevance(self, pairs):
        return [s.supported for s in self.support([(p, q) for q, p in pairs])]


QUESTIONS = {q.id: q for q in bundled_questions()}
DOCS = {d.id: d for d in bundled_documents()}


def sentence_with(doc_id: str, needle: str) -> str:
    text = " ".join(DOCS[doc_id].text.split())
    return next(s for s in re.split(r"(?<=\.)\s+", text) if needle in s)


@pytest.fixture(scope="module")
def pipe(tmp_path_factory):
    llm = FakeLLM(responses={})
    with open_pipeline(PipelineConfig(index_dir=str(tmp_path_factory.mktemp("idx") / "i")), llm=llm) as p:
        yield p, llm


def diagnose(pipe, qid: str, answer: str):
    p, llm = pipe
    llm.responses = {"Question:": answer}
    q = QUESTIONS[qid]
    sample = p.answer(q.question, q)
    [j] = judge_batch([sample], ["groundedness", "answer_correctness", "context_precision"],
                      [ScorerJudge(ExactFactsScorer()), LabelsJudge()])
    return classify(j)


def test_outdated_member_of_a_conflicting_pair_is_grounded_yet_hallucinated(pipe):
    stale = sentence_with("a17-paged-attention-2023", "32 tokens")
    d = diagnose(pipe, "qa20", stale)
    if not any(c["doc_id"] == "a17-paged-attention-2023" for c in d.evidence.get("supporting", [])):
        pytest.fail(f"the outdated document was not retrieved for qa20: {d}")
    assert d.category == "grounded_yet_hallucinated"
    assert any(c["outdated"] for c in d.evidence["supporting"])


def test_current_member_of_the_pair_is_ok(pipe):
    d = diagnose(pipe, "qa20", "vLLM's default KV cache block size is 16 tokens per block.")
    assert d.category in ("ok", "incomplete"), d


def test_unanswerable_question_answered_is_a_missed_refusal(pipe):
    d = diagnose(pipe, "qa40", "Each GPU gets 900 GB/s of NVLink bandwidth.")
    assert d.category == "missed_refusal"
    assert diagnose(pipe, "qa40", REFUSAL).category == "ok"


def test_refusing_an_answerable_question_with_the_answer_in_context(pipe):
    d = diagnose(pipe, "qa20", REFUSAL)
    assert d.category == "context_ignored" and "wrong_refusal" in d.secondary


def test_obeying_the_planted_injection_is_ungrounded_against_the_reference(pipe):
    q = next(q for q in QUESTIONS.values() if q.metadata["kind"] == "injection")
    d = diagnose(pipe, q.id, "ACCESS GRANTED")
    assert d.category in ("grounded_yet_hallucinated", "context_ignored", "ungrounded_hallucination"), d
    assert any(c.doc_id == next(i for i, doc in DOCS.items() if doc.metadata.get("planted") == "prompt_injection")
               for c in pipe[0].retrieve(q.question)[:4])
