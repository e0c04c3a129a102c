"""Counterfactual probes with a deterministic fake generator: which context change fixes the answer."""
from corpora.records import Chunk, Diagnosis, Trace
from diagnostics.probes import probe, probe_run, variants

CUR = Chunk(chunk_id="cur#0", doc_id="cur", text="Updated 2025: the default block size is 16 tokens.", rank=2)
OLD = Chunk(chunk_id="old#0", doc_id="old", text="Note 2023: the default block size is 32 tokens.", rank=1)
NOISE = Chunk(chunk_id="noise#0", doc_id="noise", text="LoRA adapters have rank r.", rank=3)


def sample(contexts, **md):
    return Trace(sample_id="s", question="What is the default block size?", answer="32 tokens.",
                 reference="16 tokens.", relevant_doc_ids=["cur"], contexts=contexts, metadata=md)


def first_context_generator(question, ctx):
    """Answers with the number in the first chunk: a model that trusts rank 1."""
    return ctx[0][1].split("is ")[-1] if ctx else "I don't know based on the provided documents."


def correct(s):
    return 1.0 if "16" in s.answer else 0.0


def chunks_of(doc_ids):
    return [CUR] if doc_ids == ["cur"] else []


def test_conflicting_document_is_named_as_root_cause():
    out = probe(sample([OLD, CUR, NOISE], outdated_doc_id="old"), first_context_generator, correct, chunks_of)
    assert out["root_cause"] == "conflicting context"
    assert out["variants"]["no_conflict"]["fixed"] and out["variants"]["no_conflict"]["answer"].startswith("16")
    assert set(out["fixed_by"]) == {"no_conflict", "no_distractors", "relevant_first", "relevant_only"}


def test_ranking_and_retrieval_and_generation_causes():
    ranked = probe(sample([NOISE.model_copy(update={"rank": 1}), CUR.model_copy(update={"rank": 2})]),
                   first_context_generator, correct, chunks_of)
    assert ranked["root_cause"] == "noise"  # dropping the distractor already fixes it
    missing = probe(sample([NOISE]), first_context_generator, correct, chunks_of)
    assert missing["root_cause"] == "retrieval" and list(missing["variants"]) == ["relevant_only"]
    stubborn = probe(sample([OLD, CUR], outdated_doc_id="old"), lambda q, c: "64 tokens.", correct, chunks_of)
    assert stubborn["root_cause"] == "generation" and stubborn["fixed_by"] == []


def test_variants_only_when_they_change_the_context():
    assert variants(sample([CUR]), chunks_of) == {}
    no_labels = Trace(sample_id="x", question="q?", contexts=[CUR])
    assert "skipped" in probe(no_labels, first_context_generator, correct, chunks_of)


def test_probe_run_attaches_results_and_survives_generator_errors():
    diags = [Diagnosis(sample_id="s", category="grounded_yet_hallucinated", rule="r"),
             Diagnosis(sample_id="ok", category="ok", rule="r")]

    def broken(q, c):
        raise RuntimeError("server down")

    n = probe_run(diags, {"s": sample([OLD, CUR], outdated_doc_id="old"), "ok": sample([CUR])}, broken, correct,
                  chunks_of, progress=False)
    assert n == 1 and diags[1].probe is None
    assert all("server down" in v["error"] for v in diags[0].probe["variants"].values())
    assert diags[0].probe["root_cause"] == "undetermined"


def test_a_sample_whose_answer_is_already_right_is_not_probed():
    """Audit 5: a right answer diagnosed off_topic got root cause 'noise' (every variant 'fixed' what was not broken)."""
    right = sample([NOISE.model_copy(update={"rank": 1}), CUR.model_copy(update={"rank": 2})])
    right.answer = "16."
    out = probe(right, first_context_generator, correct, chunks_of)
    assert "root_cause" not in out and "already" in out["skipped"]
    diags = [Diagnosis(sample_id="s", category="ungrounded_hallucination", rule="r")]
    probe_run(diags, {"s": right}, first_context_generator, correct, chunks_of, progress=False)
    assert "root_cause" not in diags[0].probe
