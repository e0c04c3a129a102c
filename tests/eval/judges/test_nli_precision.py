"""The shipped judge's CPU precision: auto picks bf16 only where the CPU multiplies bf16 natively, the environment
variable overrides it, a wrong name is a one-line usage error, and every precision scores close to fp32 (bf16 also
independently of the batch a pair is in)."""
import numpy as np
import pytest

from corpora.errors import UsageError
from eval.judges import nli
from eval.judges.weights import default_model_dir

PAIRS = [("The bridge opened to traffic in 1937 after four years of work.", "The bridge opened in 1937."),
         ("The bridge opened to traffic in 1937 after four years of work.", "The bridge opened in 1951."),
         ("Paged attention stores the KV cache in fixed-size blocks of 16 tokens.", "KV blocks hold 16 tokens."),
         ("Tensor parallelism should stay within one node; use pipeline parallelism across nodes.",
          "A tensor-parallel group should span two nodes.")]


def test_auto_follows_the_cpu_and_the_environment_overrides(monkeypatch):
    monkeypatch.delenv(nli.PRECISION_ENV, raising=False)
    monkeypatch.setattr(nli, "native_bf16", lambda: True)
    assert nli.cpu_precision() == "bf16"
    monkeypatch.setattr(nli, "native_bf16", lambda: False)
    assert nli.cpu_precision() == "int8" and nli.cpu_precision("auto") == "int8"
    monkeypatch.setenv(nli.PRECISION_ENV, " FP32 ")
    assert nli.cpu_precision() == "fp32"
    assert nli.cpu_precision("bf16") == "bf16"  # an explicit argument wins over the environment
    monkeypatch.setenv(nli.PRECISION_ENV, "fp8")
    with pytest.raises(UsageError, match=r"RAGDOCTOR_JUDGE_PRECISION='fp8': expected one of auto, bf16, int8, fp32"):
        nli.cpu_precision()


def test_the_precision_names_the_judge(monkeypatch):
    from eval.judges.registry import JudgeOptions, make_judge

    monkeypatch.setenv(nli.PRECISION_ENV, "fp32")
    assert make_judge("nli", JudgeOptions()).config_id.endswith("@len=160@fp32")
    monkeypatch.setenv(nli.PRECISION_ENV, "int8")
    assert make_judge("nli", JudgeOptions()).config_id.endswith("@len=160@int8")


@pytest.mark.parametrize("precision,tolerance", [("bf16", 0.1), ("int8", 0.8)])
def test_each_precision_scores_close_to_fp32(precision, tolerance):
    ref = nli.load_scorer(default_model_dir(), precision="fp32").support_logits(PAIRS)
    scorer = nli.load_scorer(default_model_dir(), precision=precision)
    got = scorer.support_logits(PAIRS)
    assert np.abs(got - ref).max() < tolerance
    assert np.array_equal(got > 0, ref > 0)  # no verdict flips on these clear pairs
    if precision == "bf16":
        alone = np.array([scorer.support_logits([p])[0] for p in PAIRS])
        assert np.abs(alone - got).max() < 0.02
