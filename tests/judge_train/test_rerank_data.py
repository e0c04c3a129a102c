"""Listwise groups for the retrieval reranker (judge_train/rerank_data.py) on the tiny pool of test_train.py: the
relevant passage first, negatives never the query's own passages, judged negatives used, split by group."""
import random

import pytest

from judge_train.data import heldout
from judge_train.rerank_data import rerank_groups, source_groups, source_queries
from judge_train.train import reciprocal_rank
from tests.judge_train.test_train import FACTS, write_pool


@pytest.fixture
def pool(tmp_path):
    return write_pool(tmp_path / "train")


def test_queries_sort_passages_by_what_bears_on_them(pool):
    fc = source_queries("factcheck_gpt", pool)
    first = FACTS[0][0].split(". ")[0] + "."
    assert fc[first].relevant == [FACTS[0][0]] and not fc[first].judged_negative
    irrelevant = [q for q in fc.values() if q.judged_negative]  # the rows whose stance is 'irrelevant'
    assert irrelevant and all(not q.relevant or set(q.relevant).isdisjoint(q.judged_negative) for q in irrelevant)
    qnli = source_queries("qnli", pool)  # keyed by the question; the not_entailment sentence is a judged negative
    assert qnli[FACTS[1][1]].judged_negative == [FACTS[2][0]] and not qnli[FACTS[1][1]].relevant
    sci = source_queries("scitail", pool)  # a contradicted hypothesis' premise is its own, never a negative
    assert sci[FACTS[0][3]].other == [FACTS[0][0]] and not sci[FACTS[0][3]].relevant
    with pytest.raises(ValueError, match="not a rerank source"):
        source_queries("mnli", pool)


@pytest.mark.parametrize("source", ["factcheck_gpt", "attributionbench", "scitail", "halueval_qa", "qnli"])
def test_groups_put_a_relevant_passage_first_and_never_the_querys_own_after_it(pool, source):
    queries = source_queries(source, pool)
    train, held = source_groups(source, pool, 50, 50, 3, 40, 100, random.Random(0))
    assert train or held
    for g in train + held:
        q = queries[g.query]
        assert len(g.passages) == 4 and g.passages[0] in q.relevant
        assert set(g.passages[1:]).isdisjoint(q.own()) and len(set(g.passages)) == 4
        assert heldout(g.group, 40) == (g in held)


def test_judged_negatives_are_used_and_windows_are_cut(pool, tmp_path):
    train, held = source_groups("qnli", pool, 50, 50, 3, 0, 100, random.Random(0))
    assert not held
    (g,) = [g for g in train if g.query == FACTS[0][1]]
    assert g.passages[0] == FACTS[0][0]
    # a long passage becomes the window of 20 words that shares most words with the query
    long_pool = write_pool(tmp_path / "long")
    filler = " ".join(f"filler{i}" for i in range(60))
    path = long_pool / "halueval_qa_train.jsonl"
    path.write_text(path.read_text().replace('"knowledge": "The Eiffel', f'"knowledge": "{filler} The Eiffel'))
    train, _ = source_groups("halueval_qa", long_pool, 50, 50, 3, 0, 20, random.Random(0))
    (g,) = [g for g in train if g.query == FACTS[0][1]]
    assert len(g.passages[0].split()) == 20 and "Eiffel" in g.passages[0]


def test_rerank_groups_are_deterministic_and_capped_per_source(pool):
    caps = {"factcheck_gpt": 3, "qnli": 2, "halueval_qa": 0}
    a = rerank_groups(pool, caps, 3, 20, 100, seed=5, drop_dev_overlap=False)
    b = rerank_groups(pool, caps, 3, 20, 100, seed=5, drop_dev_overlap=False)
    assert a == b
    train, held, stats = a
    assert set(stats["rerank_groups"]) == {"factcheck_gpt", "qnli"}  # a cap of 0 drops a source
    assert sum(g.source == "factcheck_gpt" for g in train) <= 3 and sum(g.source == "qnli" for g in train) <= 2
    assert stats["rerank_groups"]["factcheck_gpt"]["train"] == sum(g.source == "factcheck_gpt" for g in train)


def test_reciprocal_rank_counts_ties_against_the_relevant_passage():
    assert reciprocal_rank([3.0, 1.0, 2.0]) == 1.0
    assert reciprocal_rank([2.0, 3.0, 1.0]) == 0.5
    assert reciprocal_rank([1.0, 1.0, 1.0]) == pytest.approx(1 / 3)
