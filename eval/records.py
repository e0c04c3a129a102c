"""Records of evaluation: what is judged (EvalSample), and what comes out (MetricResult, Judgement).

A metric result is a value in [0, 1] or an explicit ``unmeasured`` state with its reason: never a silent NaN or 0."""
from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from corpora.records import Question

Outcome = Literal["answered", "refused", "blocked", "error"]


class Context(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    id: str
    text: str
    doc_id: str | None = None
    rank: int | None = Field(None, ge=1)
    score: float | None = None


class EvalSample(BaseModel):
    """One (question, contexts, answer) to score, from rag/ traces or from any other system."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    question: Question
    contexts: list[Context] = Field(default_factory=list)
    answer: str = ""
    reference: str | None = None
    relevant_ids: list[str] | None = Field(None, description="relevant document ids (ranked-list labels)")
    outcome: Outcome = "answered"
    metadata: dict[str, Any] = Field(default_factory=dict)
    has_contexts: bool | None = Field(None, description="False when the input carried no contexts at all: the metrics "
                                      "that read contexts are then unmeasured, never 0 (default: contexts non-empty)")

    @model_validator(mode="after")
    def _contexts_known(self) -> EvalSample:
        if self.has_contexts is None:
            self.has_contexts = bool(self.contexts)
        return self

    @property
    def context_texts(self) -> list[str]:
        return [c.text for c in self.contexts]

    @property
    def doc_ids_known(self) -> bool:
        """Whether the contexts say which document each came from: a ``doc_id`` on some context, or (records that put
        the document id in ``id``) a context id among the relevant ids. Without it no retrieval metric can be read."""
        ids = {c.id for c in self.contexts}
        return any(c.doc_id for c in self.contexts) or bool(set(self.relevant_ids or ()) & ids)

    @property
    def retrieved_doc_ids(self) -> list[str]:
        ranked = sorted(self.contexts, key=lambda c: (c.rank if c.rank is not None else 10**9))
        return list(dict.fromkeys(c.doc_id or c.id for c in ranked))


# ok: a value; unmeasured: the judge could not decide (counts against the gate); not_applicable: the metric does not
# apply to this sample (no reference, unanswerable question): excluded from means and from the unmeasured rate.
Status = Literal["ok", "unmeasured", "not_applicable"]


class MetricResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: str
    judge: str
    value: float | None = None
    status: Status = "ok"
    reason: str | None = None
    evidence: dict[str, Any] = Field(default_factory=dict)
    seconds: float | None = None

    @field_validator("value")
    @classmethod
    def _in_unit_interval(cls, v: float | None) -> float | None:
        if v is None:
            return v
        if math.isnan(v) or not 0.0 <= v <= 1.0:
            raise ValueError(f"metric value must be in [0, 1], got {v}")
        return float(v)

    @classmethod
    def ok(cls, metric: str, judge: str, value: float, **evidence: Any) -> MetricResult:
        return cls(metric=metric, judge=judge, value=value, evidence=evidence)

    @classmethod
    def unmeasured(cls, metric: str, judge: str, reason: str, **evidence: Any) -> MetricResult:
        return cls(metric=metric, judge=judge, status="unmeasured", reason=reason, evidence=evidence)

    @classmethod
    def not_applicable(cls, metric: str, judge: str, reason: str, **evidence: Any) -> MetricResult:
        return cls(metric=metric, judge=judge, status="not_applicable", reason=reason, evidence=evidence)

    @property
    def measured(self) -> bool:
        return self.status == "ok" and self.value is not None


class Judgement(BaseModel):
    """Everything measured for one sample, appended to the run's results log as it completes."""

    model_config = ConfigDict(extra="forbid")

    sample_id: str
    eval_hash: str = ""  # the metrics, judges and their configuration (eval.runner.eval_hash)
    sample_hash: str = ""  # the sample's content (eval.runner.sample_hash): a changed record is judged again
    results: list[MetricResult] = Field(default_factory=list)
    sample: EvalSample | None = None

    def get(self, metric: str, judge: str | None = None) -> MetricResult | None:
        for r in self.results:
            if r.metric == metric and (judge is None or r.judge == judge):
                return r
        return None
