"""The combiners' calibration slice against the stages' own held-out shares (judge_train/package.py
calibration_share): `judge combine` and `judge refit` fit on at most the smallest share any stage they score held out
(its training_config.json's recipe.data.heldout_percent, and that of every stage its weights come from), so no
combiner is fit on records a cross-encoder trained on; a stage that records none, or 0, is refused in one line before
--out is touched; a model folder with no records is warned of; the share used is in package.json and the log.
Was: a fixed 10% slice, whatever the stages held out (a stage trained at 5% had trained on half of it)."""
import json
import logging
import shutil
from pathlib import Path

import pytest

from corpora.errors import UsageError
from judge_train import package
from judge_train.data import heldout
from tests.judge_train.test_small_pool import _run, stages  # noqa: F401 - stages: the tiny trained stages (fixture)
from tests.judge_train.test_train import write_pool

FIELD = "field 'recipe.data.heldout_percent'"


class _Stop(Exception):
    """Raised by the spy in place of the combiner's fit: the share it was asked for is all these tests need."""


@pytest.fixture
def fitted_on(monkeypatch):
    """The calibration share build/refit_support hand to support_calibration (the fit itself is not run)."""
    asked: list[int] = []

    def spy(records, data_dir, *, percent, per_label, seed):
        asked.append(percent)
        raise _Stop

    monkeypatch.setattr(package, "support_calibration", spy)
    return asked


def _stage(folder, share=10, *, base="minilm", task="support", mix_base=None, drop=False):
    """A stage folder's training record alone (all calibration_share reads): ``share`` its held-out percent;
    ``drop``: no such field; ``mix_base``: a weight mix whose base is that folder."""
    folder.mkdir(parents=True, exist_ok=True)
    data = {} if drop else {"heldout_percent": share}
    record: dict = {"recipe": {"recipe": folder.name, "task": task, "base_model": str(base), "data": data}}
    if mix_base is not None:
        record["interpolated"] = {"base": str(mix_base), "weight": 0.5}
    (folder / "training_config.json").write_text(json.dumps(record))
    return folder


def _build(tmp_path, pool, *, support, relevance=None, nli=None, cross_fit=()):
    return package.build(support, relevance, tmp_path / "judge", str(pool), nli=nli, cross_fit=list(cross_fit),
                         log=lambda _m: None)


@pytest.mark.parametrize("role", ["support", "relevance", "nli", "cross_fit", "started_from", "mix_base"])
def test_combine_fits_on_the_smallest_share_a_stage_held_out(tmp_path, fitted_on, role):
    pool = write_pool(tmp_path / "train")
    five = _stage(tmp_path / "five", 5)
    support = _stage(tmp_path / "sup", 20, base=five if role == "started_from" else "minilm",
                     mix_base=five if role == "mix_base" else None)
    given = {"support": support, "relevance": _stage(tmp_path / "rel", 20, task="relevance"),
             "nli": _stage(tmp_path / "nli", 20), "cross_fit": [_stage(tmp_path / "fold", 20)]}
    if role in given:
        given[role] = [five] if role == "cross_fit" else five
    with pytest.raises(_Stop):
        _build(tmp_path, pool, **given)
    assert fitted_on == [5]  # was 10: half of that slice was trained on by the stage held out at 5%
    groups = [f"mnli:{k}" for k in range(5000)]  # heldout() is a threshold on one hash: the 5% is in every larger one
    assert all(heldout(g, 10) and heldout(g, 20) for g in groups if heldout(g, 5))
    # every stage held out more than 10%: the slice stays at 10% (the calibration half of it, as before)
    with pytest.raises(_Stop):
        _build(tmp_path, pool, support=_stage(tmp_path / "s20", 20), relevance=_stage(tmp_path / "r40", 40))
    assert fitted_on == [5, 10]
    assert not (tmp_path / "judge").exists()


def _judge(folder, shares: dict):
    """A judge folder's package.json listing its stages and their records under stages/ (None: no such field)."""
    folder.mkdir()
    (folder / "package.json").write_text(json.dumps({"stages": list(shares), "heldout_percent": 10}))
    for name, share in shares.items():
        _stage(folder / "stages" / name, share or 0, drop=share is None)
    return folder


def test_refit_fits_on_the_smallest_share_of_the_judge_stages_folds_and_support(tmp_path, fitted_on):
    pool = write_pool(tmp_path / "train")
    judge = _judge(tmp_path / "judge", {"sup": 20, "nli-stage": 5, "rel": 20})
    with pytest.raises(_Stop):
        package.refit_support(judge, tmp_path / "refit", str(pool), log=lambda _m: None)
    even = _judge(tmp_path / "judge20", {"sup": 20})
    for extra in ({"cross_fit": [_stage(tmp_path / "fold", 5)]}, {"support": _stage(tmp_path / "mix", 5)}):
        with pytest.raises(_Stop):
            package.refit_support(even, tmp_path / "refit", str(pool), log=lambda _m: None, **extra)
    assert fitted_on == [5, 5, 5]
    assert not (tmp_path / "refit").exists()


@pytest.mark.parametrize("share, why", [(0, "0: the stage held nothing out"),
                                        (None, "missing: the stage does not say which groups"),
                                        ("10", "'10' is not a whole percent from 1 to 100")])
def test_a_stage_that_records_no_share_or_0_is_refused_before_out_is_touched(tmp_path, fitted_on, share, why):
    pool = write_pool(tmp_path / "train")
    ok = _stage(tmp_path / "ok", 10)
    bad = _stage(tmp_path / "bad", share if share is not None else 0, drop=share is None)
    for given in ({"support": bad}, {"support": ok, "relevance": bad}, {"support": ok, "nli": bad},
                  {"support": ok, "cross_fit": [bad]}, {"support": _stage(tmp_path / "on-bad", 10, base=bad)}):
        with pytest.raises(UsageError) as err:
            _build(tmp_path, pool, **given)
        assert str(err.value).startswith(f"{bad / 'training_config.json'}: {FIELD}: {why}"), str(err.value)
        assert "no calibration slice of the pool is unseen by it" in str(err.value) and "\n" not in str(err.value)
    judge = _judge(tmp_path / "judge-in", {"sup": 10, "nli-stage": share})
    with pytest.raises(UsageError, match=f"^{judge / 'stages' / 'nli-stage' / 'training_config.json'}: {FIELD}"):
        package.refit_support(judge, tmp_path / "refit", str(pool), log=lambda _m: None)
    assert fitted_on == [] and not (tmp_path / "judge").exists() and not (tmp_path / "refit").exists()


def test_a_model_folder_without_records_is_warned_of_and_the_others_shares_used(tmp_path, fitted_on, caplog):
    pool = write_pool(tmp_path / "train")
    elsewhere = tmp_path / "cross-encoder-from-elsewhere"
    elsewhere.mkdir()
    (elsewhere / "config.json").write_text("{}")
    with caplog.at_level(logging.WARNING, logger="ragdoctor.notices"), pytest.raises(_Stop):
        _build(tmp_path, pool, support=_stage(tmp_path / "sup", 5), relevance=elsewhere)
    assert fitted_on == [5]
    said = [r.getMessage() for r in caplog.records if "held-out share" in r.getMessage()]
    assert said == [f"warning: {elsewhere} has no training record (training_config.json): its held-out share is "
                    "unknown (the calibration slice may hold records it trained on); the slice follows the other "
                    "stages' shares"]


def test_the_bundled_stage_records_say_their_share():
    from judge_train.stage_files import heldout_shares

    weights = Path(__file__).resolve().parents[2] / "eval" / "judges" / "weights"
    shares, unknown = heldout_shares(weights / "rerank-minilm-v1")  # started from v5's relevance/: its stages/ record
    assert shares[str(weights / "rerank-minilm-v1")] == 10 and set(shares.values()) == {10} and unknown == []
    shares, unknown = heldout_shares(weights / "groundedness-minilm-v5" / "relevance")
    assert shares[str(weights / "groundedness-minilm-v5" / "stages" / "minilm-relevance-stage")] == 10
    assert set(shares.values()) == {10} and unknown == []
    judge = weights / "groundedness-minilm-v5"
    found = [heldout_shares(s) for s in package.judge_stages(judge)]
    assert [u for _, u in found] == [[]] * 4 and {v for s, _ in found for v in s.values()} == {10}


# through the CLI: the tiny trained stages of test_small_pool ------------------------------------------------------


def _copy_stage(root, name, to, share=None, drop=False, records=True):
    """A copy of the tiny trained stage ``root``/``name`` whose record says ``share`` (``drop``: no such field; ``records``:
    False drops the training_config.json itself)."""
    dest = root / to
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(root / name, dest)
    tc_path = dest / "training_config.json"
    if not records:
        tc_path.unlink()
        return dest
    tc = json.loads(tc_path.read_text())
    if drop:
        del tc["recipe"]["data"]["heldout_percent"]
    elif share is not None:
        tc["recipe"]["data"]["heldout_percent"] = share
    tc_path.write_text(json.dumps(tc, indent=1))
    return dest


@pytest.mark.model
def test_combine_and_refit_record_the_share_they_fit_on(stages, capfd):  # noqa: F811 - the fixture
    pool = stages / "train"
    support5 = _copy_stage(stages, "support", "support-5", 5)
    rel = _copy_stage(stages, "relevance", "relevance-unrecorded", records=False)
    judge = stages / "judge-5"
    code, out, err = _run(["judge", "combine", "--support", str(support5), "--relevance", str(rel), "--out",
                           str(judge), "--data-dir", str(pool)], capfd)
    assert code == 0, err
    assert "calibration slice: 5% of each source's groups (stages' held-out shares: support-5 5%)" in out
    assert f"ragdoctor: warning: {rel} has no training record (training_config.json): its held-out share" in err
    assert json.loads((judge / "package.json").read_text())["heldout_percent"] == 5  # was 10
    assert "held-out slice (5% of each source's groups)" in json.loads((judge / "combiner.json").read_text())[
        "unmeasured"]["relevance"]
    # refit of a judge whose stages held out 40%, with a fold model that held out 5%
    base = stages / "judge-40"
    code, _, err = _run(["judge", "combine", "--support", str(stages / "support"), "--out", str(base),
                         "--data-dir", str(pool)], capfd)
    assert code == 0, err
    assert json.loads((base / "package.json").read_text())["heldout_percent"] == 10
    fold5 = _copy_stage(stages, "support", "fold-5", 5)
    refit = stages / "refit-5"
    code, out, err = _run(["judge", "refit", str(base), "--cross-fit", str(fold5), "--out", str(refit),
                           "--data-dir", str(pool)], capfd)
    assert code == 0, err
    assert "calibration slice: 5% of each source's groups" in out and "fold-5 5%" in out
    assert json.loads((refit / "package.json").read_text())["support_refit"]["heldout_percent"] == 5  # was 10


@pytest.mark.model
def test_a_stage_that_held_out_nothing_is_refused_through_the_cli(stages, capfd):  # noqa: F811 - the fixture
    pool = stages / "train"
    judge = stages / "kept-judge"
    code, _, err = _run(["judge", "combine", "--support", str(stages / "support"), "--out", str(judge),
                         "--data-dir", str(pool)], capfd)
    assert code == 0, err
    before = {p.relative_to(judge): p.read_bytes() for p in judge.rglob("*") if p.is_file()}
    fold0 = _copy_stage(stages, "support", "fold-0", 0)
    unsaid = _copy_stage(stages, "support", "support-unsaid", drop=True)
    refit = stages / "no-refit"
    for argv, bad in ((["combine", "--support", str(stages / "support"), "--cross-fit", str(fold0), "--out",
                        str(judge)], f"{fold0 / 'training_config.json'}: {FIELD}: 0: the stage held nothing out"),
                      (["combine", "--support", str(unsaid), "--out", str(judge)],
                       f"{unsaid / 'training_config.json'}: {FIELD}: missing"),
                      (["refit", str(judge), "--support", str(fold0), "--out", str(refit)],
                       f"{fold0 / 'training_config.json'}: {FIELD}: 0")):
        code, out, err = _run(["judge", *argv, "--data-dir", str(pool)], capfd)
        assert code == 2 and err.count("\n") == 1 and err.startswith(f"ragdoctor: error: {bad}"), err
        assert out == ""
    assert {p.relative_to(judge): p.read_bytes() for p in judge.rglob("*") if p.is_file()} == before
    assert not refit.exists()


def test_reports_on_the_held_out_slice_sample_no_more_than_the_judges_held_out(tmp_path):
    """meta-eval --dataset pool and judge crossfit-report score judges on the report half of the held-out slice: a
    judge whose stages held out 5% is scored on the 5% slice (at 10% half its records would be ones it trained on)."""
    judge = _judge(tmp_path / "judge", {"support-stage": 5, "relevance-stage": 10})
    (judge / "combiner.json").write_text("{}")
    assert package.report_share([judge], 10) == 5
    assert package.report_share([_stage(tmp_path / "fold", 20)], 10) == 10  # never more than the suite's 10
    assert package.report_share([judge, _stage(tmp_path / "fold3", 3)], 10) == 3
    assert package.report_share([], 10) == 10  # no nli judge: lexical and embedding trained on nothing here
