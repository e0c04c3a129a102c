"""The judge registry (eval/judges/registry.py): a name -> how to build it, which metrics it measures, its trust."""
import re

import pytest

from corpora.errors import InputError, UsageError
from corpora.records import Trace
from eval.judges.registry import (
    JUDGE_PREFERENCE,
    JUDGES,
    JudgeOptions,
    UnavailableJudge,
    check_coverage,
    check_nli_model,
    covered,
    judges_for,
    make_judge,
    make_judges,
    parse_judges,
    parse_metrics,
)
from eval.judges.scorer import ScorerJudge


def test_names_measures_and_preference():
    assert list(JUDGES) == ["nli", "embedding", "lexical", "llm", "ragas", "labels"]
    assert JUDGE_PREFERENCE == ("nli", "llm", "ragas", "lexical", "embedding")
    assert judges_for("recall@3") == ("labels",)
    assert judges_for("groundedness") == ("nli", "embedding", "lexical", "llm", "ragas")
    assert "ragas" not in judges_for("noise_sensitivity")  # no ragas counterpart declared


def test_every_built_judge_names_its_configuration():
    assert make_judge("lexical", JudgeOptions()).config_id == "lexical:v1"
    assert make_judge("labels", JudgeOptions()).config_id == "labels:pytrec_eval"
    unavailable = make_judges(["llm"], JudgeOptions())[0]
    assert isinstance(unavailable, UnavailableJudge) and unavailable.config_id == "llm:unavailable"
    r = unavailable.judge("groundedness", [Trace(sample_id="s", question="q?")])[0]
    assert r.status == "unmeasured" and r.reason.startswith("judge unavailable: the llm judge needs an LLM")
    assert ScorerJudge(make_judge("lexical", JudgeOptions()).scorer).config_id == \
        "lexical:LexicalScorer@support=0.75@relevance=0.5@premises=6"  # every setting that changes a verdict


def test_parsing_and_coverage_are_usage_errors():
    assert parse_judges("lexical, labels,lexical") == ["lexical", "labels"]
    with pytest.raises(UsageError, match="unknown judge 'lexcal'"):
        parse_judges("lexcal")
    with pytest.raises(UsageError, match="unknown metrics 'a', 'b'"):
        parse_metrics("a,b")
    assert covered(["groundedness", "recall@5"], ["labels"]) == ["recall@5"]
    with pytest.raises(UsageError, match="no judge among ragas measures 'noise_sensitivity'"):
        check_coverage(["noise_sensitivity"], ["ragas"])


def test_a_named_nli_model_folder_is_checked_before_any_work(tmp_path):
    check_nli_model(None)  # the shipped judge: nothing to check
    with pytest.raises(UsageError, match=r"^--nli-model .*nope: folder not found$"):
        check_nli_model(tmp_path / "nope")
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="notes.txt: not a folder"):
        check_nli_model(tmp_path / "notes.txt")
    with pytest.raises(UsageError, match=r"^--compare-nli .*: not a judge folder \(support/, combiner.json\) or a "):
        check_nli_model(tmp_path, "--compare-nli")
    (tmp_path / "config.json").write_text('{"mine": true}')  # the right file name, no model: only loading tells
    check_nli_model(tmp_path)
    with pytest.raises(UsageError, match=r"cannot be loaded \(ValueError: Unrecognized model") as err:
        check_nli_model(tmp_path, load=True)
    assert "\n" not in str(err.value)
    (tmp_path / "config.json").unlink()
    (tmp_path / "support").mkdir()  # a judge folder's shape: its support model is loaded and fails the same way
    with pytest.raises(UsageError, match="cannot be loaded"):
        check_nli_model(tmp_path, load=True)
    for name, text, why in (("combiner.json", '{"support": {"features": [', "malformed JSON at line 1"),
                            ("idf.json", '["the", 1.0]', r"not a JSON object \(a list\)")):
        (tmp_path / name).write_text(text)  # a damaged judge file: the one line names it, not a decoder's message
        with pytest.raises(InputError, match=rf"^{re.escape(str(tmp_path / name))}: {why}"):
            check_nli_model(tmp_path, load=True)
        (tmp_path / name).unlink()


def test_the_fact_checks_threshold_reaches_its_judge(monkeypatch):
    from eval.guard_adapter import make_fact_check

    check = make_fact_check("lexical")
    assert check.name == "lexical:v1" and check("The sky is green.", []) == (0.0, [
        {"claim": "The sky is green.", "verdict": "unsupported", "score": 0.0, "chunk_id": None, "sentence": None}])
    seen = {}

    def build(opts):  # the nli judge's weights are not needed to see what it is built with
        seen["opts"] = opts
        return make_judge("lexical", opts)

    monkeypatch.setitem(JUDGES, "nli", JUDGES["nli"].__class__("nli", build, JUDGES["nli"].measures, 0))
    make_fact_check("nli", nli_threshold=0.7)
    assert seen["opts"].nli_threshold == 0.7  # it was dropped before (written to a field nothing read)


@pytest.mark.model
def test_nli_config_id_names_the_folder_by_content(tmp_path):
    """A judge folder re-combined in place is another judge (a resume never reuses the old verdicts); the same folder
    copied elsewhere is the same judge."""
    import json
    import shutil

    from eval.judges.weights import default_model_dir

    shipped = default_model_dir()
    assert shipped is not None
    base = make_judge("nli", JudgeOptions()).config_id
    assert base.startswith(f"nli:{shipped.name}@") and str(shipped.parent) not in base
    copy = tmp_path / shipped.name
    shutil.copytree(shipped, copy)
    assert make_judge("nli", JudgeOptions(nli_model=str(copy))).config_id == base
    combiner = copy / "combiner.json"
    spec = json.loads(combiner.read_text())
    spec["support"]["intercept"] += 0.1
    combiner.write_text(json.dumps(spec))
    assert make_judge("nli", JudgeOptions(nli_model=str(copy))).config_id != base
