"""The retrieval metrics (eval/retrieval_metrics.py, the recall@k / precision@k / mrr@k / ndcg@k family of
eval/metrics/retrieval.py, the labs' label reading) against their definitions written out here (trec_eval's, as
pytrec_eval, ir_measures and BEIR compute them): hand-computed edge cases, then seeded random cases compared with the
reference below at each level a number is made (a ranking, a trace, an index lab's chunk positions)."""
import math
import random

import numpy as np
import pytest

from corpora.records import Candidate, Chunk, Trace
from eval.index_lab import LabelIds, ndcg_at_10
from eval.judges.labels import LabelsJudge
from eval.metrics import get
from eval.retrieval_metrics import mean_metrics, retrieval_metrics

L3 = math.log2(3)


# --- the reference: the standard definitions, written out -------------------------------------------------------------

def reference(grades: dict[str, int], ranking: list[str], k: int) -> dict[str, float] | None:
    """recall@k, precision@k, mrr@k, ndcg@k of one query; None when no id is relevant (unmeasured, not 0)."""
    rel = {d: g for d, g in grades.items() if g > 0}  # 0 and negative grades: judged not relevant
    if not rel:
        return None
    top = list(dict.fromkeys(ranking))[:k]  # an id counts once, at its first rank
    hits = [d in rel for d in top]
    rr = next((1 / (i + 1) for i, h in enumerate(hits) if h), 0.0)
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(top))  # gain = the grade (trec_eval, BEIR)
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(rel.values(), reverse=True)[:k]))  # every relevant id
    return {f"recall@{k}": sum(hits) / len(rel), f"precision@{k}": sum(hits) / k, f"mrr@{k}": rr,
            f"ndcg@{k}": dcg / idcg}


def reference_trace(grades: dict[str, int], ranked: list[tuple[str, str | None]], name: str) -> float | str:
    """One trace (``ranked``: (chunk id, doc id) in rank order) under ``name``: the value, or "n/a" / "unmeasured".
    The ranking is by document (a chunk without a doc id stands for itself), or by chunk when the relevant ids name
    retrieved chunks and no retrieved document."""
    relevant = {d for d, g in grades.items() if g > 0}
    if not relevant:
        return "n/a"
    chunk_ids, docs = {c for c, _ in ranked}, {d or c for c, d in ranked}
    by_chunk = bool(relevant & chunk_ids) and not relevant & docs
    k = int(name.split("@")[1])
    out = reference(grades, [c if by_chunk else d or c for c, d in ranked], k)
    assert out is not None
    return out[name]


def test_the_reference_on_hand_computed_values():
    """The reference itself, on numbers worked out by hand."""
    r = reference({"a": 3, "b": 1, "c": 0, "z": 2}, ["c", "b", "b", "a"], 3)  # z: relevant, never retrieved
    assert r == pytest.approx({"recall@3": 2 / 3, "precision@3": 2 / 3, "mrr@3": 1 / 2,
                               "ndcg@3": (1 / L3 + 3 / 2) / (3 + 2 / L3 + 1 / 2)})
    assert reference({"a": 0, "b": -1}, ["a"], 5) is None


# --- hand-computed edge cases against the project ---------------------------------------------------------------------

def _one(grades: dict[str, int], ranking: list[str], k: int) -> dict[str, float]:
    return retrieval_metrics({"q": grades}, {"q": ranking}, ks=(k,))["q"]


def test_a_document_retrieved_twice_counts_once():
    # a, a, b with a and b relevant: the top 2 documents are a and b (not a twice), p@2 1.0, recall@2 1.0
    assert _one({"a": 1, "b": 1}, ["a", "a", "b"], 2) == {"recall@2": 1.0, "precision@2": 1.0, "ndcg@2": 1.0,
                                                          "mrr@2": 1.0}
    # and the same document's two chunks in a trace are one document at its best rank
    t = Trace(sample_id="s", question="q?", answer="x", relevant_doc_ids=["a", "b"],
              contexts=[Chunk(chunk_id="a#0", doc_id="a", rank=1, text="t"),
                        Chunk(chunk_id="a#1", doc_id="a", rank=2, text="t"),
                        Chunk(chunk_id="b#0", doc_id="b", rank=3, text="t")])
    assert get("precision@2").apply(None, "labels", [t])[0].value == 1.0
    assert get("recall@2").apply(None, "labels", [t])[0].value == 1.0


def test_k_past_the_ranking_empty_rankings_and_relevant_ids_outside_the_corpus():
    assert _one({"a": 1}, ["a"], 10) == pytest.approx({"recall@10": 1.0, "precision@10": 0.1, "ndcg@10": 1.0,
                                                       "mrr@10": 1.0})
    # "not-in-corpus" was never retrievable: it still counts in recall's and nDCG's denominators
    assert _one({"a": 1, "not-in-corpus": 1}, ["a"], 5) == pytest.approx(
        {"recall@5": 0.5, "precision@5": 0.2, "ndcg@5": 1 / (1 + 1 / L3), "mrr@5": 1.0})
    zero = {"recall@3": 0.0, "precision@3": 0.0, "ndcg@3": 0.0, "mrr@3": 0.0}
    assert _one({"a": 1}, [], 3) == zero
    assert retrieval_metrics({"q": {"a": 1}}, {}, ks=(3,)) == {"q": zero}  # no ranking at all: nothing retrieved


def test_an_empty_ranking_scores_0_whatever_the_relevant_ids_are_called():
    """An empty ranking was given to pytrec_eval as the one id "__none__": a relevant id of that name made nothing
    retrieved a perfect hit (recall@1 0.5, precision@1 1.0, MRR 1.0 for {"__none__": 1, "a": 1})."""
    assert _one({"__none__": 1, "a": 1}, [], 1) == {"recall@1": 0.0, "precision@1": 0.0, "ndcg@1": 0.0, "mrr@1": 0.0}


def test_grades_0_and_below_are_judged_not_relevant_and_gain_nothing():
    # c (-1) at rank 1, b (1) at 2, a (2) at 3: DCG 1/log2(3) + 2/2 against the ideal 2 + 1/log2(3)
    r = _one({"a": 2, "b": 1, "c": -1, "d": 0}, ["c", "b", "a", "d"], 3)
    assert r == pytest.approx({"recall@3": 1.0, "precision@3": 2 / 3, "mrr@3": 0.5,
                               "ndcg@3": (1 / L3 + 1) / (2 + 1 / L3)})
    assert retrieval_metrics({"q": {"a": 0, "b": -2}}, {"q": ["a", "b"]}) == {}  # no relevant id: not measured


def test_graded_ndcg_uses_the_grade_as_gain_and_every_relevant_id_for_the_ideal():
    # the best document (grade 3) is not retrieved: DCG 1 (b at rank 1) against the ideal 3 + 1/log2(3)
    assert _one({"a": 3, "b": 1}, ["b", "x"], 10)["ndcg@10"] == pytest.approx(1 / (3 + 1 / L3))
    # linear gain, not 2^grade - 1: b then a scores (1 + 3/log2 3) / (3 + 1/log2 3), 0.872 (exponential: 0.744)
    assert _one({"a": 3, "b": 1}, ["b", "a"], 10)["ndcg@10"] == pytest.approx((1 + 3 / L3) / (3 + 1 / L3))
    # the ideal is cut at k: one relevant document of grade 1 at rank 1 of 1 is perfect though a grade-2 one exists
    assert _one({"a": 2, "b": 1}, ["b"], 1)["ndcg@1"] == pytest.approx(0.5)


def test_tied_scores_keep_the_recorded_order():
    """The metrics read ranks, never scores: trec_eval would re-sort tied scores by document id (b before a)."""
    chunks = [Chunk(chunk_id=f"{d}#0", doc_id=d, rank=i, score=0.5, text="t") for i, d in enumerate("ab", start=1)]
    t = Trace(sample_id="s", question="q?", answer="x", relevant_doc_ids=["b"], contexts=chunks)
    assert get("mrr@10").apply(None, "labels", [t])[0].value == 0.5


def test_a_relevant_chunk_is_found_though_a_document_graded_0_was_retrieved():
    """The level (chunks or documents) was decided by every label, a grade-0 one included: {"kv#1": 1, "lora": 0}
    with lora retrieved ranked documents, so the retrieved relevant chunk kv#1 never matched (recall@5 0.0, not 1.0);
    the index and retrieval labs read labels the same way."""
    chunks = [Chunk(chunk_id="lora#0", doc_id="lora", rank=1, text="t"),
              Chunk(chunk_id="kv#1", doc_id="kv", rank=2, text="t")]
    t = Trace(sample_id="s", question="q?", answer="x", metadata={"qrels": {"kv#1": 1, "lora": 0}}, contexts=chunks)
    r = get("recall@5").apply(None, "labels", [t])[0]
    assert r.value == 1.0 and r.evidence["level"] == "chunk"
    assert get("mrr@10").apply(None, "labels", [t])[0].value == 0.5
    ids = LabelIds(["lora", "kv", "kv"], ["lora#0", "kv#0", "kv#1"])
    assert ids.ranking([0, 2, 1], {"kv#1": 1, "lora": 0}) == ["lora#0", "kv#1", "kv#0"]
    assert ndcg_at_10(ids, np.array([[0, 2, 1]]), ["q"], {"q": {"kv#1": 1, "lora": 0}}) == pytest.approx(1 / L3)


def test_two_traces_of_one_sample_id_in_a_batch_keep_their_own_rankings():
    """The batch was keyed by sample id, so the second trace's ranking scored both (recall@1 [0.0, 0.0])."""
    hit = Trace(sample_id="s", question="q?", answer="x", relevant_doc_ids=["a"],
                contexts=[Chunk(chunk_id="a#0", doc_id="a", rank=1, text="t")])
    miss = hit.model_copy(update={"contexts": [Chunk(chunk_id="b#0", doc_id="b", rank=1, text="t")]})
    assert [r.value for r in get("recall@1").apply(None, "labels", [hit, miss])] == [1.0, 0.0]


def test_a_question_without_a_relevant_id_is_not_applicable_with_its_reason():
    m = get("ndcg@10")
    graded_0 = Trace(sample_id="s", question="q?", answer="x", metadata={"qrels": {"a": 0, "b": -1}},
                     contexts=[Chunk(chunk_id="a#0", doc_id="a", rank=1, text="t")])
    r = m.apply(None, "labels", [graded_0])[0]
    assert r.status == "not_applicable" and r.value is None
    assert r.reason == "no relevant document among the labels (every grade is 0 or below)"
    bare = graded_0.model_copy(update={"metadata": {}, "relevant_doc_ids": None})
    assert m.apply(None, "labels", [bare])[0].reason == "no relevance labels"


def test_the_mean_is_over_the_questions_with_a_relevant_id():
    per_query = retrieval_metrics({"hit": {"a": 1}, "miss": {"a": 1}, "none": {"a": 0}, "empty": {}},
                                  {"hit": ["a"], "miss": ["b"], "none": ["a"]}, ks=(1,))
    assert set(per_query) == {"hit", "miss"}  # unlabelled and all-0 questions are left out, neither 0 nor 1
    assert mean_metrics(per_query) == {"recall@1": 0.5, "precision@1": 0.5, "ndcg@1": 0.5, "mrr@1": 0.5}
    assert mean_metrics({}) == {}


# --- seeded random cases against the reference ------------------------------------------------------------------------

IDS = ["a", "b", "c", "d", "e", "f", "g", "a b", " a", "é", "0", "__none__", "doc#0", "doc"]
GRADES = [-2, -1, 0, 0, 1, 1, 2, 3]


def test_rankings_match_the_reference_on_random_cases():
    rng = random.Random(0)
    qrels, rankings = {}, {}
    for i in range(400):
        labelled = rng.sample(IDS, rng.randint(0, len(IDS)))
        qrels[f"q{i}"] = {d: rng.choice(GRADES) for d in labelled}
        rankings[f"q{i}"] = [rng.choice(IDS) for _ in range(rng.randint(0, 14))]  # duplicates, unlabelled ids
    for ks in ((1,), (3, 10), (1, 5, 20)):
        got = retrieval_metrics(qrels, rankings, ks=ks)
        kmax = max(ks)
        want = {}
        for q in qrels:
            if (full := reference(qrels[q], rankings[q], kmax)) is None:
                continue
            want[q] = {f"mrr@{kmax}": full[f"mrr@{kmax}"]}
            for k in ks:
                want[q].update({n: v for n, v in reference(qrels[q], rankings[q], k).items()  # type: ignore[union-attr]
                                if not n.startswith("mrr")})
        assert set(got) == set(want)
        for q in want:
            assert got[q] == pytest.approx(want[q], abs=1e-9), (q, qrels[q], rankings[q])


def test_traces_match_the_reference_on_random_cases():
    """Chunks of one document, chunks without a doc id, candidates past the cut, labels naming documents or chunks
    (graded or not, with 0 and negative grades), one batch per metric as a judge computes it."""
    rng = random.Random(1)
    docs = ["a", "b", "c", "d", "e"]
    cases = []
    for i in range(300):
        chunk_ids = list(dict.fromkeys(f"{rng.choice(docs)}#{rng.randint(0, 2)}" for _ in range(rng.randint(0, 9))))
        ranked = [(c, c.split("#")[0] if rng.random() > 0.1 else None) for c in chunk_ids]
        cut = rng.randint(0, len(ranked))
        labels = rng.sample(docs + [f"{d}#{j}" for d in docs for j in range(3)], rng.randint(0, 4))
        graded = rng.random() < 0.6
        grades = {x: rng.choice(GRADES) if graded else 1 for x in labels}
        t = Trace(sample_id=f"s{i % 250}",  # a few ids twice: each trace is scored on its own ranking
                  question="q?", answer="x", relevant_doc_ids=None if graded else labels,
                  metadata={"qrels": grades} if graded and grades else {},
                  contexts=[Chunk(chunk_id=c, doc_id=d, rank=r, text="t")
                            for r, (c, d) in enumerate(ranked[:cut], start=1)],
                  candidates=[Candidate(chunk_id=c, doc_id=d, rank=r)
                              for r, (c, d) in enumerate(ranked[cut:], start=cut + 1)])
        cases.append((t, grades, ranked))
    judge = LabelsJudge()
    for name in ("recall@1", "recall@5", "precision@2", "precision@10", "mrr@3", "mrr@10", "ndcg@1", "ndcg@10"):
        results = judge.judge(name, [t for t, _, _ in cases])
        for (t, grades, ranked), r in zip(cases, results):
            ctx = [c for c, d in ranked[:len(t.chunks)]]
            no_doc_ids = bool(ctx) and not any(d for _, d in ranked[:len(ctx)]) and not set(grades) & set(ctx)
            want = reference_trace(grades, ranked, name)
            if want != "n/a" and no_doc_ids:
                want = "unmeasured"  # the contexts cannot be compared with the labels: never a measured 0
            got = r.value if r.status == "ok" else {"not_applicable": "n/a"}.get(r.status, r.status)
            assert got == (want if isinstance(want, str) else pytest.approx(want, abs=1e-9)), (name, grades, ranked)


def test_the_index_labs_label_reading_matches_the_reference_on_random_cases():
    """Chunk positions of an index (padded with -1) read as documents or chunks, as a trace's labels are read."""
    rng = random.Random(2)
    doc_ids = [f"d{i // 3}" for i in range(30)]
    chunk_ids = [f"d{i // 3}#{i % 3}" for i in range(30)]
    ids = LabelIds(doc_ids, chunk_ids)
    names = sorted(set(doc_ids)) + chunk_ids + ["elsewhere"]
    qrels, positions = {}, []
    for i in range(200):
        # relevant ids of one level (documents, or chunks), an id outside the index, judged-not-relevant ids of either
        level = rng.choice([sorted(set(doc_ids)), chunk_ids])
        grades = {x: rng.randint(1, 3) for x in rng.sample(level + ["elsewhere"], rng.randint(0, 3))}
        qrels[f"q{i}"] = {**{x: rng.choice([-2, -1, 0]) for x in rng.sample(names, rng.randint(0, 2))}, **grades}
        positions.append(rng.sample(range(30), 20) + [-1] * 5)  # faiss pads with -1
    pos = np.array(positions)
    per_query = []
    for (q, grades), row in zip(qrels.items(), positions):
        seen = [(chunk_ids[p], doc_ids[p]) for p in row if p >= 0]
        if (v := reference_trace(grades, seen, "ndcg@10")) != "n/a":
            per_query.append(v)
    assert ndcg_at_10(ids, pos, list(qrels), {q: g for q, g in qrels.items() if any(x > 0 for x in g.values())}) == \
        pytest.approx(float(np.mean(per_query)), abs=1e-12)
