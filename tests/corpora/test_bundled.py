"""The demo's default question set (corpora/bundled.py: demo_questions): stratified by planted kind, fixed."""
from collections import Counter

from corpora.bundled import DEMO_QUOTA, bundled_questions, demo_questions
from corpora.records import Question


def test_demo_set_keeps_every_planted_case_and_a_few_of_each_other_kind():
    full = bundled_questions()
    demo = demo_questions()
    kinds = Counter(q.metadata.get("kind") for q in demo)
    everything = Counter(q.metadata.get("kind") for q in full)
    assert len(demo) == 24
    assert set(kinds) == set(everything)  # every planted kind represented
    for kind in ("conflict", "distractor", "injection"):
        assert kinds[kind] == everything[kind]  # all of the cases the diagnostics exist for
    for kind, n in DEMO_QUOTA.items():
        assert kinds[kind] == (everything[kind] if n is None else min(n, everything[kind]))
    assert [q.id for q in demo] == [q.id for q in full if q in demo]  # the question set's order
    assert demo_questions() == demo  # the same set every time


def test_demo_set_is_picked_by_id_hash_not_position():
    qs = [Question(id=f"q{i}", question=f"question {i}?", metadata={"kind": "factoid"}) for i in range(40)]
    picked = demo_questions(qs, {"factoid": 5})
    assert len(picked) == 5 and [q.id for q in picked] != [f"q{i}" for i in range(5)]
    assert demo_questions(list(reversed(qs)), {"factoid": 5}) == list(reversed(picked))  # order-independent choice
    assert demo_questions(qs, {"other": None}) == []  # kinds the quota does not name are left out
