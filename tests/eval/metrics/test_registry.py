"""The metric registry (eval/metrics/__init__.py): one declaration per metric, names declared once."""
import pytest

from corpora.errors import UsageError
from eval.metrics import DEFAULT_METRICS, METRICS, get, model_metrics


def test_every_metric_is_one_declaration_with_its_own_name():
    assert all(name == m.name for name, m in METRICS.items())
    assert DEFAULT_METRICS == ("groundedness", "context_precision", "answer_relevance", "context_recall",
                               "answer_correctness", "recall@5", "mrr@10", "ndcg@10")
    assert [m.name for m in model_metrics(default_only=True)] == list(DEFAULT_METRICS[:5])
    assert {"noise_sensitivity", "context_utilisation"} <= set(METRICS)


def test_unknown_metric_is_a_usage_error_naming_the_valid_ones():
    with pytest.raises(UsageError, match="valid: groundedness"):
        get("groundednes")
