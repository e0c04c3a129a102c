"""answer_relevance's rules and computation on hand-made traces (eval/metrics/answer_relevance.py)."""
from eval.metrics import get
from tests.eval.metrics.records import strict, trace

METRIC = get("answer_relevance")
REFUSAL = "I don't know based on the provided documents."


def test_rules():
    assert METRIC.fixed(trace(outcome="blocked"), "j").status == "not_applicable"
    assert METRIC.fixed(trace("  "), "j").reason == "empty answer"
    for wordless in ("...", "[kv#0]", "[1][2]"):  # a citation mark alone says nothing ("[kv#0]" was 0.333)
        assert METRIC.fixed(trace(wordless), "j").reason == "the answer has no words to check", wordless
    assert METRIC.fixed(trace(REFUSAL, reference=None), "j").status == "unmeasured"  # no label says answerable
    assert METRIC.fixed(trace(REFUSAL, metadata={"kind": "unanswerable"}), "j").value == 1.0
    assert METRIC.fixed(trace(REFUSAL), "j").value == 0.0  # the reference answers it


def test_the_judges_relevance_clipped_to_the_unit_interval():
    (r,) = strict().judge("answer_relevance", [trace()])
    assert 0.0 < r.value <= 1.0


BLOCK, YEAR, LORA = "What is the default block size in vLLM?", "Which year was PagedAttention published?", \
    "Does LoRA freeze the base weights?"
HOW_MANY = "How many GPUs does tensor parallelism need?"


def asked(question: str, answer: str, **fields):
    return trace(answer, **fields).model_copy(update={"question": question})


def test_a_bare_answer_of_the_kind_the_question_asks_for_is_relevant_for_every_judge():
    # the judges read a fragment without its question: nli gave "16 tokens." 0.05, as it gave "Paris."
    for question, answer, kind in ((BLOCK, "16 tokens.", "number"), (YEAR, "2023.", "date"), (LORA, "Yes.", "yes/no"),
                                   (LORA, "No, it isn't.", "yes/no"), (LORA, "Yes [1].", "yes/no"),
                                   (HOW_MANY, "two", "number"), ("When was vLLM released?", "June 2023.", "date")):
        t = asked(question, answer)
        results = [METRIC.fixed(t, j) for j in ("lexical", "nli", "embedding", "llm")]
        assert {(r.status, r.value) for r in results} == {("ok", 1.0)}, answer
        assert results[0].evidence["answer_type"] == kind and "gives the" in results[0].evidence["note"], answer
        (r,) = strict().judge("answer_relevance", [t])
        assert r.value == 1.0, answer


def test_a_bare_answer_of_another_kind_is_not_relevant():
    for question, answer in ((HOW_MANY, "Paris."), (BLOCK, "Paris."), (YEAR, "Blue."), (HOW_MANY, "Yes.")):
        r = METRIC.fixed(asked(question, answer), "j")
        assert (r.status, r.value) == ("ok", 0.0), (question, answer)
        assert r.evidence["note"].startswith("a bare answer that gives no"), answer


def test_a_bare_answer_its_fragment_cannot_tell_is_unmeasured_with_its_reason():
    r = METRIC.fixed(asked("Who wrote vLLM?", "Woosuk Kwon."), "j")
    assert r.status == "unmeasured" and "asks for no yes/no, number or date" in r.reason
    for question, answer, why in ((HOW_MANY, "Several.", "amount or time in words"),
                                  (LORA, "Only the adapters.", "yes/no question that is no yes or no"),
                                  (LORA, "No idea.", "does not know"),
                                  ("Friert LoRA die Basisgewichte ein?", "Ja.", "asks for no yes/no")):  # English only
        r = METRIC.fixed(asked(question, answer), "j")
        assert r.status == "unmeasured" and why in r.reason, answer


def test_a_bare_answer_that_picks_one_of_the_alternatives_offered_is_relevant():
    """ "FP16." to "Is the KV cache stored in FP8 or FP16?" scored 0.06 by nli: it names one of the options."""
    for question, answer in (("Is the KV cache stored in FP8 or FP16?", "FP16."),
                             ("Should I use LoRA or full fine-tuning?", "Full fine-tuning."),
                             ("Which is faster, vLLM or TGI?", "vLLM [1].")):
        r = METRIC.fixed(asked(question, answer), "j")
        assert (r.status, r.value, r.evidence["answer_type"]) == ("ok", 1.0, "choice"), answer
    assert METRIC.fixed(asked("Is it supported or not?", "Only on Linux."), "j").status == "unmeasured"
    assert METRIC.fixed(asked("Is the KV cache stored in FP8 or FP16?", "Paris."), "j").status == "unmeasured"


def test_a_sentence_answer_and_a_fragment_naming_the_question_go_to_the_judge():
    sentence = asked(BLOCK, "The default block size in vLLM is 16 tokens.")
    shares = asked("Who maintains the KV cache manager?", "The cache manager.")  # names what the question asks about
    short = asked("Who wrote vLLM?", "It is there.")  # four words or fewer, but a sentence (an auxiliary)
    for pronoun in ("It stores optimizer momentum.", "They freeze them."):  # a subject pronoun: a sentence too
        assert METRIC.fixed(asked("What does the KV cache store?", pronoun), "j") is None, pronoun
    assert [METRIC.fixed(t, "j") for t in (sentence, shares, short)] == [None, None, None]
    judged = strict().judge("answer_relevance", [sentence, shares, short])
    assert [r.value for r in judged] == [r.value for r in METRIC.compute(strict(), "j", [sentence, shares, short])]
    assert "bare" not in judged[0].evidence
    assert METRIC.fixed(asked(HOW_MANY, "16 tokens."), "j").value == 1.0  # the bare rule, as a contrast


def test_a_bare_refusal_keeps_the_refusal_rule():
    r = METRIC.fixed(asked(HOW_MANY, "No answer."), "j")
    assert (r.value, r.evidence) == (0.0, {"refusal": True})
    assert METRIC.fixed(asked(HOW_MANY, "No answer.", metadata={"kind": "unanswerable"}), "j").value == 1.0
