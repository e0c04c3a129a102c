"""Cross-fitted combiner features (judge_train/crossfit.py): which model scores which held-out record."""
import json

import numpy as np

from judge_train.crossfit import assign_folds, cross_fitted_rows, origin_sources, trained_sources
from judge_train.data import PoolRecord, swap_records
from eval.judges.nli import SUPPORT_FEATURES


def _stage(path, caps, base="minilm"):
    path.mkdir(parents=True)
    (path / "training_config.json").write_text(json.dumps({"recipe": {"recipe": path.name, "base_model": str(base),
                                                                      "data": {"cap_per_label": caps}}}))
    return path


def test_trained_sources_follow_the_stages_a_model_started_from(tmp_path):
    nli = _stage(tmp_path / "nli", {"mnli": 10, "snli": 5})
    fold = _stage(tmp_path / "fold", {"halueval_qa": 100, "begin": 0, "mnli": 20}, base=nli)
    assert trained_sources(fold) == {"halueval_qa", "mnli", "snli"}  # a cap of 0 is not trained on
    assert trained_sources(tmp_path / "nowhere") == set()
    loop = _stage(tmp_path / "loop", {"faithdial": 3}, base=tmp_path / "loop")  # a stage naming itself ends the walk
    assert trained_sources(loop) == {"faithdial"}


def _rec(source, group, label=1, text="Paris is the capital of France.", evidence="Paris is the capital of France."):
    return PoolRecord(source, group, evidence, text, label, "")


def test_synthetic_records_take_the_sources_they_were_made_from():
    recs = [_rec("begin", "begin:1"), _rec("halueval_qa", "hqa:2"),
            _rec("synthetic_swaps", "begin:1:orig"), _rec("synthetic_swaps", "hqa:2:swap", 0),
            _rec("synthetic_long_evidence", "hqa:2"), _rec("synthetic_conjunctions", "begin:1+hqa:2"),
            _rec("synthetic_swaps", "gone:9:orig")]
    assert origin_sources(recs) == [{"begin"}, {"halueval_qa"}, {"begin"}, {"halueval_qa"}, {"halueval_qa"},
                                    {"begin", "halueval_qa"}, None]
    # fold 0 never saw begin, fold 1 never saw halueval_qa; a record of both sources needs a fold that saw neither;
    # one whose origin is unknown (not in the sample) is no fold's to score: the full model, never fold 0 by default
    folds = [{"halueval_qa", "mnli"}, {"begin", "mnli"}]
    assert assign_folds(recs, folds) == [0, 1, 0, 1, 1, -1, -1]
    # the report samples each source on its own: the origin is then found in the pool it was sampled from
    sample = [_rec("synthetic_swaps", "begin:1:orig"), _rec("synthetic_conjunctions", "begin:1+hqa:2")]
    assert origin_sources(sample) == [None, None]
    assert origin_sources(sample, pool=recs[:2]) == [{"begin"}, {"begin", "halueval_qa"}]
    assert assign_folds(sample, folds, pool=recs[:2]) == [0, -1]
    assert assign_folds([_rec("mnli", "mnli:1")], folds) == [-1]  # every fold saw it: the full model scores it
    made = swap_records([_rec("begin", "begin:7")], per_label=1, seed=0)
    assert made and {frozenset({"begin"})} == set(origin_sources([_rec("begin", "begin:7"), *made])[1:])


class _Fake:
    """A scorer whose every feature is its own id, so a row says which model scored it."""

    support_features = SUPPORT_FEATURES

    def __init__(self, ident):
        self.ident = ident

    def claim_features(self, items):
        return np.full((len(items), len(SUPPORT_FEATURES)), float(self.ident)), [None] * len(items)


def test_each_record_is_scored_by_a_model_that_never_saw_its_source():
    recs = [_rec("begin", "begin:1", 1, "It is in France. It is a capital."), _rec("mnli", "mnli:2", 0),
            _rec("halueval_qa", "hqa:3", 0), _rec("begin", "begin:4", 0), _rec("synthetic_swaps", "hqa:3:orig")]
    folds = [(_Fake(1), {"halueval_qa", "mnli"}), (_Fake(2), {"begin", "mnli"})]
    rows, counts = cross_fitted_rows(_Fake(0), folds, recs, log=lambda _m: None)
    per_record = {int(r): set(rows.x[rows.record == r, 0]) for r in range(len(recs))}
    assert per_record == {0: {1.0}, 1: {0.0}, 2: {2.0}, 3: {1.0}, 4: {2.0}}
    assert counts == {"full": 1, "fold0": 2, "fold1": 2}
    assert (rows.record == 0).sum() == 2  # two claims of the first record, both rows kept
    assert np.all(np.diff(rows.record) >= 0)  # rows in record order, as claim_rows gives them
    assert rows.label.tolist() == [1, 0, 0, 0, 1] and rows.source == [r.source for r in recs]
    assert rows.group == [r.group for r in recs]


def test_refit_refuses_what_it_cannot_use_in_one_line(tmp_path, capsys):
    from ragdoctor.cli import main

    pool = tmp_path / "train"
    pool.mkdir()
    judge = tmp_path / "judge"
    judge.mkdir()
    cases = [([str(tmp_path / "nowhere")], "not a judge folder made by 'ragdoctor judge combine'")]
    (judge / "combiner.json").write_text("{}")
    assert main(["judge", "refit", str(judge), "--out", str(tmp_path / "new"), "--data-dir", str(pool)]) == 2
    assert "no combiner.json and package.json" in capsys.readouterr().err  # a combiner alone is not enough
    (judge / "package.json").write_text("{}")
    assert main(["judge", "refit", str(judge), "--out", str(tmp_path / "new"), "--data-dir", str(pool)]) == 2
    assert "field 'support': no support combiner" in capsys.readouterr().err
    (judge / "combiner.json").write_text("[1, 2")
    assert main(["judge", "refit", str(judge), "--out", str(tmp_path / "new"), "--data-dir", str(pool)]) == 2
    assert "combiner.json: malformed JSON at line 1" in capsys.readouterr().err
    (judge / "combiner.json").write_text('{"support": {"features": ["ce_max"]}}')
    bare = tmp_path / "bare"  # a CrossEncoder folder without its recipe: which sources it saw cannot be told
    bare.mkdir()
    (bare / "config.json").write_text("{}")
    cases += [([str(judge), "--cross-fit", str(tmp_path / "nofold")], "not a trained stage folder"),
              ([str(judge), "--cross-fit", str(bare)], "no training_config.json in"),
              ([str(judge), "--support", str(bare)], "no training_config.json in"),
              ([str(judge), "--data-dir", str(tmp_path / "nopool")], "training pool not found"),
              ([str(judge), "--out", str(judge)], "would be replaced before its input")]
    for argv, message in cases:
        out = ["--out", str(tmp_path / "new")] if "--out" not in argv else []
        data = ["--data-dir", str(pool)] if "--data-dir" not in argv else []
        assert main(["judge", "refit", *argv, *out, *data]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("ragdoctor: error: ") and message in err, err
    assert not (tmp_path / "new").exists()
