"""The records that flow through ragdoctor, one per stage (pydantic models that reject unknown fields):

    Document, Question  a corpus and what is asked of it (corpora/)
    Trace               one answered question: the retrieved chunks (and the candidates past the cut), the prompt, the
                        answer, its outcome, per-stage latency, the guardrails' record and the error, if any. Made by
                        the pipeline (rag/), or adapted from any other system's output at the edge (eval/adapters.py)
    Judgement           every metric result of one trace, with the trace it judged (eval/)
    Diagnosis           the failure category of one judged trace, the rule that fired and its evidence (diagnostics/)

A run folder holds them as files (corpora/run_folder.py). What a question record says about its right answer
(``metadata.kind``, ``metadata.answerable``, the planted conflicts of the bundled set) is read here and nowhere else.
"""
from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)


def not_blank(v: str) -> str:
    """A pydantic validator: the text has something besides whitespace."""
    if not v.strip():
        raise ValueError("is blank")
    return v


def one_line(v: str) -> str:
    """A pydantic validator: a name shown in one table cell and used as a key holds no line break or other control
    character (a newline in it would split the line it is printed on)."""
    bad = next((c for c in v if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise ValueError(f"holds a control character ({bad!r}): give it on one line")
    return v


def says_something(text: str) -> bool:
    """The text holds a letter or digit (any script): "", "  ", "...", "???" and emoji alone say nothing a judge
    could read."""
    return any(c.isalnum() for c in text)


def question_problem(text: object) -> str | None:
    """Why ``text`` asks nothing (blank, or no letter or digit), said the same by every caller; None when it asks."""
    if not isinstance(text, str) or not text.strip():
        return "the question is blank"
    if not says_something(text):
        return "the question has no letter or digit: nothing is asked"
    return None


def answerable_problem(metadata: Mapping[str, Any]) -> str | None:
    """Why ``metadata.answerable`` cannot be read (None when absent or a boolean): "false" would read as no label."""
    value = metadata.get("answerable")
    return None if value is None or isinstance(value, bool) else f"must be true or false, got {value!r}"


def relevant_docs(grades: Mapping[str, float]) -> list[str]:
    """The documents a graded relevance label (qrels: {doc id: grade}) calls relevant: a grade above 0, sorted."""
    return sorted(d for d, g in grades.items() if g > 0)


def qrels_problem(metadata: Mapping[str, Any], relevant_doc_ids: list[str] | None) -> str | None:
    """What is wrong with ``metadata.qrels`` (graded labels: {doc id: whole-number grade}, read by the retrieval
    metrics and the labs before ``relevant_doc_ids``), or None: it must be that shape and name the same relevant
    documents (grade > 0) as ``relevant_doc_ids`` when both are given (two labels that disagree: neither in silence)."""
    qrels = metadata.get("qrels")
    if qrels is None:
        return None
    if not isinstance(qrels, dict) or not all(
            isinstance(d, str) and d.strip() and isinstance(g, (int, float)) and not isinstance(g, bool)
            and math.isfinite(g) and float(g).is_integer() for d, g in qrels.items()):
        return 'qrels must be an object of document id -> whole-number grade, e.g. {"doc1": 2, "doc7": 0}'
    relevant = relevant_docs(qrels)
    if relevant_doc_ids is not None and sorted(set(relevant_doc_ids)) != relevant:
        return (f"qrels names {relevant} relevant (grade > 0) but relevant_doc_ids is {sorted(set(relevant_doc_ids))}: "
                "give one, or make them agree")
    return None


def words_or_none(v: str | None) -> str | None:
    """A pydantic validator: a reference answer without a letter or digit ("", "  ", ".") is no reference (None), so
    every metric reads it as missing (not applicable) instead of scoring against nothing."""
    return v if v is not None and says_something(v) else None


def has_words(v: str) -> str:
    """A pydantic validator: a question says something (a letter or digit in any script); "???" asks nothing a judge
    could read the answer or the contexts against."""
    not_blank(v)
    if not says_something(v):
        raise ValueError("has no letter or digit: nothing is asked")
    return v


QuestionText = Annotated[str, Field(min_length=1), AfterValidator(has_words)]  # a question with words in it
ReferenceText = Annotated[str | None, AfterValidator(words_or_none)]
RecordId = Annotated[str, Field(min_length=1), AfterValidator(not_blank)]  # an id a label can refer to: not "  "
Outcome = Literal["answered", "refused", "blocked", "error"]


def _hash(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class Document(BaseModel):
    """One source document. ``id`` is the unit that relevance labels refer to."""

    model_config = ConfigDict(extra="forbid")

    id: RecordId
    text: str
    title: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


class Labels:
    """What a question record (a Question, or the Trace that answered it) says about its right answer."""

    reference: str | None
    relevant_doc_ids: list[str] | None
    metadata: dict[str, Any]

    @property
    def labelled_unanswerable(self) -> bool:
        """``metadata.kind == "unanswerable"`` or ``metadata.answerable == false``."""
        return self.metadata.get("kind") == "unanswerable" or self.metadata.get("answerable") is False

    @property
    def labelled_answerable(self) -> bool:
        """``metadata.answerable == true``."""
        return self.metadata.get("answerable") is True

    @property
    def relevance_grades(self) -> dict[str, int]:
        """{doc id: grade} the retrieval metrics read: ``metadata.qrels`` when given (graded, validated on read), else
        grade 1 for each of ``relevant_doc_ids``."""
        qrels = self.metadata.get("qrels")
        if isinstance(qrels, dict) and qrels:
            return {str(d): int(g) for d, g in qrels.items()}
        return {d: 1 for d in self.relevant_doc_ids or []}

    @property
    def outdated_doc_id(self) -> str | None:
        """The outdated member of a conflicting pair planted for this question (the bundled set)."""
        return self._doc("outdated_doc_id")

    @property
    def near_duplicate_id(self) -> str | None:
        """A near-duplicate distractor planted for this question (the bundled set)."""
        return self._doc("near_duplicate_id")

    @property
    def conflicting_doc_ids(self) -> set[str]:
        """Documents planted to mislead on this question."""
        return {d for d in (self.outdated_doc_id, self.near_duplicate_id) if d is not None}

    def _doc(self, key: str) -> str | None:
        value = self.metadata.get(key)
        return None if value is None else str(value)


class Question(BaseModel, Labels):
    """One question with what is known about its right answer."""

    model_config = ConfigDict(extra="forbid")

    id: RecordId
    question: QuestionText
    reference: ReferenceText = None
    relevant_doc_ids: list[str] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("metadata")
    @classmethod
    def _graded_labels(cls, metadata: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        """``metadata.answerable`` is a boolean when given (as evaluation rows require). ``metadata.qrels`` (graded
        labels: {doc id: whole-number grade}, what the labs read before ``relevant_doc_ids``) must be that shape and
        name the same relevant documents (grade > 0) as ``relevant_doc_ids`` when both are given: two labels that
        disagree are refused, never one of them in silence."""
        why = answerable_problem(metadata)
        if why:
            raise ValueError(f"metadata.answerable {why}")
        why = qrels_problem(metadata, info.data.get("relevant_doc_ids"))
        if why:
            raise ValueError(why)
        return metadata

    @property
    def answerable(self) -> bool | None:
        """False when the record says so, True when it names relevant documents; None otherwise: an empty
        ``relevant_doc_ids`` means "no labels", not "unanswerable" (eval.answerability also reads a refusal
        reference)."""
        if self.labelled_unanswerable:
            return False
        return True if self.relevant_doc_ids else None

    def content_hash(self, salt: str = "") -> str:
        """Hash of the record and ``salt`` (the index's corpus checksum): what a trace was answered from."""
        return _hash([self.model_dump(mode="json"), salt])


class Chunk(BaseModel):
    """A retrieved chunk given to the generator. ``doc_id`` is None when an imported record does not say which
    document the chunk came from (then no retrieval metric can be read from it)."""

    model_config = ConfigDict(extra="forbid")

    chunk_id: str
    doc_id: str | None = None
    rank: int = Field(ge=1)
    score: float | None = None
    text: str
    title: str = ""
    signals: dict[str, float] = Field(default_factory=dict, description="dense/bm25/rrf scores and ranks")
    flags: list[str] = Field(default_factory=list, description="e.g. 'instruction' when a rail flagged the chunk")


class Candidate(BaseModel):
    """A chunk retrieved but not given to the generator (below the top-k cut, or left out of the context budget):
    where a relevant document was ranked out."""

    model_config = ConfigDict(extra="forbid")

    chunk_id: str
    doc_id: str | None = None
    rank: int = Field(ge=1)
    score: float | None = None
    signals: dict[str, float] = Field(default_factory=dict)


class Trace(BaseModel, Labels):
    """One answered question. ``contexts`` is None when the record does not say what was retrieved (an imported row
    without contexts): the metrics that read contexts are then unmeasured, never 0; ``[]`` means nothing was found
    (the pipeline always says)."""

    model_config = ConfigDict(extra="forbid")

    sample_id: str = Field(min_length=1)
    question: QuestionText
    reference: ReferenceText = None
    relevant_doc_ids: list[str] | None = None
    contexts: list[Chunk] | None = None
    candidates: list[Candidate] = Field(default_factory=list)
    prompt: list[dict[str, str]] = Field(default_factory=list, description="chat messages sent to the generator")
    answer: str = ""
    outcome: Outcome = "answered"
    cited_chunk_ids: list[str] = Field(default_factory=list)
    latency_ms: dict[str, float] = Field(default_factory=dict, description="per stage: retrieve, generate, total; "
                                         "read_prompt when the server reports it (in generate: time to first token)")
    usage: dict[str, float] = Field(default_factory=dict, description="what the generator reported: prompt_tokens, "
                                    "cached_tokens (its KV cache held them), completion_tokens; {}: it said none")
    config_hash: str = ""
    input_hash: str = Field("", description="Question.content_hash of the record and the index it was answered from: "
                                             "a resume reuses a trace only when it matches")
    generator: str = ""
    embedder: str = ""
    error: str | None = None
    guardrails: dict[str, Any] = Field(default_factory=dict, description="what the rails checked and decided")
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @field_validator("metadata")
    @classmethod
    def _graded(cls, metadata: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        why = qrels_problem(metadata, info.data.get("relevant_doc_ids"))
        if why:
            raise ValueError(why)
        return metadata

    @model_validator(mode="after")
    def _relevant_from_grades(self) -> Trace:
        """Graded labels alone (``metadata.qrels``, no ``relevant_doc_ids``): the documents graded above 0 are the
        relevant ones, for every reader of ``relevant_doc_ids`` (diagnostics, the dashboard)."""
        if self.relevant_doc_ids is None and isinstance(self.metadata.get("qrels"), dict):
            self.relevant_doc_ids = relevant_docs(self.metadata["qrels"])
        return self

    @field_validator("contexts")
    @classmethod
    def _ranked(cls, contexts: list[Chunk] | None) -> list[Chunk] | None:
        """Contexts in rank order (what precision@k and average precision read; list order among equal ranks), each
        chunk id once: two chunks of one id make citations and per-chunk verdicts ambiguous."""
        if contexts is None:
            return None
        seen: set[str] = set()
        for c in contexts:
            if c.chunk_id in seen:
                raise ValueError(f"two contexts have chunk id {c.chunk_id!r}: each chunk once")
            seen.add(c.chunk_id)
        return sorted(contexts, key=lambda c: c.rank)

    @classmethod
    def of(cls, q: Question, **fields: Any) -> Trace:
        """A trace of question ``q`` (its labels copied), with ``fields`` set (they win over the question's)."""
        labels = {"sample_id": q.id, "question": q.question, "reference": q.reference,
                  "relevant_doc_ids": q.relevant_doc_ids, "metadata": dict(q.metadata)}
        return cls(**{**labels, **fields})

    @property
    def has_contexts(self) -> bool:
        return self.contexts is not None

    @property
    def chunks(self) -> list[Chunk]:
        """The retrieved chunks (none when the record did not say)."""
        return self.contexts or []

    @property
    def context_texts(self) -> list[str]:
        return [c.text for c in self.chunks]

    @property
    def doc_ids_known(self) -> bool:
        """Whether the chunks say which document each came from: a ``doc_id`` on some chunk, or (records that put the
        document id in the chunk id) a chunk id among the relevant ids. Without it no retrieval metric can be read."""
        ids = {c.chunk_id for c in self.chunks}
        return any(c.doc_id for c in self.chunks) or bool(set(self.relevance_grades) & ids)

    @property
    def retrieved_doc_ids(self) -> list[str]:
        """Document ids in rank order, first occurrence only (a chunk without a doc id stands for itself)."""
        return list(dict.fromkeys(c.doc_id or c.chunk_id for c in sorted(self.chunks, key=lambda c: c.rank)))

    def ranked(self) -> list[Chunk | Candidate]:
        """Every retrieved chunk in rank order: the contexts, then the candidates past the cut."""
        return sorted([*self.chunks, *self.candidates], key=lambda c: c.rank)

    def content_hash(self) -> str:
        """Hash of everything a judge or the diagnostics read (not when or from which prompt it was made)."""
        return _hash(self.model_dump(mode="json", exclude={"created_at", "input_hash", "prompt"}))


# ok: a value; unmeasured: the judge could not decide (counts against the gate); not_applicable: the metric does not
# apply to this trace (no reference, unanswerable question): excluded from means and from the unmeasured rate.
Status = Literal["ok", "unmeasured", "not_applicable"]


class MetricResult(BaseModel):
    """A value in [0, 1], or an explicit ``unmeasured``/``not_applicable`` state with its reason: never a silent NaN
    or 0. ``evidence`` holds what made the value (claims with their verdicts and chunks, chunk verdicts, ...)."""

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

    @model_validator(mode="after")
    def _ok_has_a_value(self) -> MetricResult:
        """A result that says it was measured carries its value: status "ok" with none would be a silent NaN in every
        mean (a judge that has no value gives ``unmeasured`` with its reason; the evaluator turns a judge's result that
        fails this into "judge failed"). ``unmeasured`` and ``not_applicable`` carry none."""
        if self.status == "ok" and self.value is None:
            raise ValueError("status 'ok' needs a value in [0, 1] (a result with no value is 'unmeasured', with its "
                             "reason, or 'not_applicable')")
        return self

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
    """Everything measured for one trace, appended to the run's results log as it completes. ``sample_hash`` is the
    judged trace's ``content_hash`` and ``eval_hash`` the evaluation's configuration: a resume reuses the judgement
    only when both match. ``trace`` is the judged trace (stored without its prompt, which traces.jsonl keeps)."""

    model_config = ConfigDict(extra="forbid")

    sample_id: str
    eval_hash: str = ""
    sample_hash: str = ""
    results: list[MetricResult] = Field(default_factory=list)
    trace: Trace | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_sample(cls, data: Any) -> Any:
        """Results logs written before records were unified carry the judged record as ``sample`` (an EvalSample)."""
        if isinstance(data, dict) and "sample" in data:
            data = dict(data)
            sample = data.pop("sample")
            data.setdefault("trace", trace_from_legacy_sample(sample) if isinstance(sample, dict) else sample)
        return data

    @field_serializer("trace")
    def _trace_without_prompt(self, trace: Trace | None, info: SerializationInfo) -> Any:
        return None if trace is None else trace.model_dump(mode=info.mode, exclude={"prompt"})

    def get(self, metric: str, judge: str | None = None) -> MetricResult | None:
        for r in self.results:
            if r.metric == metric and (judge is None or r.judge == judge):
                return r
        return None


def trace_from_legacy_sample(s: dict[str, Any]) -> dict[str, Any]:
    """A Trace's fields from an EvalSample as results.jsonl stored it before records were unified: the pipeline's
    fields that it kept in ``metadata`` become the trace's own, ``has_contexts: false`` becomes ``contexts: null``."""
    md, contexts = s.get("metadata") or {}, s.get("contexts") or []
    if not isinstance(md, dict) or not isinstance(contexts, list) or not all(isinstance(c, dict) for c in contexts):
        raise ValueError("sample: not a record ragdoctor wrote")
    md = dict(md)
    typed = {key: md.pop(key) for key in ("config_hash", "latency_ms", "candidates", "error", "guardrails")
             if key in md}
    contexts = None if s.get("has_contexts") is False else [
        {"chunk_id": c.get("id"), "doc_id": c.get("doc_id"), "rank": c.get("rank") or i, "score": c.get("score"),
         "text": c.get("text")} for i, c in enumerate(contexts, 1)]
    return {"sample_id": s.get("id"), "question": s.get("question"), "reference": s.get("reference"),
            "relevant_doc_ids": s.get("relevant_ids"), "contexts": contexts, "answer": s.get("answer", ""),
            "outcome": s.get("outcome", "answered"), "metadata": md, "created_at": "", **typed}


Category = Literal[
    "ok", "retrieval_miss", "ranked_out", "noisy_context", "ungrounded_hallucination", "grounded_yet_hallucinated",
    "context_ignored", "incomplete", "off_topic", "wrong_refusal", "missed_refusal", "guardrail_block", "unmeasured",
]


class Diagnosis(BaseModel):
    """The failure category of one judged trace (definitions: diagnostics/taxonomy.py)."""

    model_config = ConfigDict(extra="forbid")

    sample_id: str
    category: Category
    secondary: list[Category] = Field(default_factory=list)
    rule: str = Field(description="the rule that fired for the primary category, in words")
    evidence: dict[str, Any] = Field(default_factory=dict)
    probe: dict[str, Any] | None = None


# the metrics a person can label (eval/metrics names): "context relevance" is context_precision's question (are the
# retrieved chunks relevant to the question?)
LabelMetric = Literal["groundedness", "answer_correctness", "context_precision", "answer_relevance", "context_recall"]


def _utc_iso(v: str) -> str:
    try:
        when = datetime.fromisoformat(v)
    except ValueError:
        raise ValueError(f"not an ISO 8601 time: {v!r}") from None
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"has no time zone (write it in UTC, e.g. {v}+00:00)")
    return v


def _stripped(v: str) -> str:
    """A pydantic validator: a name without the spaces around it (" bob" and "bob" are one person)."""
    return v.strip()


class Label(BaseModel):
    """One human judgement of one sample on one metric, appended to the run's labels.jsonl (corpora/labels.py): 0 or 1
    (no / yes), or a graded score in [0, 1]. The latest label (by ``when``) per (sample, metric, who) wins, ``who``
    compared without case ("Alice" and "alice" are one person). ``sample_hash`` is the content hash of the sample as it
    was labelled (config.json's ``samples`` entry, or its trace's ``content_hash()``): once the sample's answer changes
    the label no longer counts (it judged another answer). A label without it (written by hand) always counts."""

    model_config = ConfigDict(extra="forbid")

    sample_id: str = Field(min_length=1)
    metric: LabelMetric
    value: float = Field(ge=0.0, le=1.0)
    who: Annotated[str, Field(min_length=1), AfterValidator(not_blank), AfterValidator(one_line),
                   AfterValidator(_stripped)]
    when: Annotated[str, AfterValidator(_utc_iso)] = Field(
        default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    note: str | None = None
    sample_hash: str | None = None

    @field_validator("value", mode="before")
    @classmethod
    def _number(cls, v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and math.isnan(v)):
            raise ValueError(f"must be a number in [0, 1] (0 = no, 1 = yes), got {v!r}")
        return v

    @property
    def key(self) -> tuple[str, str, str]:
        return self.sample_id, self.metric, self.who.casefold()

    @property
    def moment(self) -> datetime:
        """``when`` as a time (offsets differ between writers: compared as strings, 01:00+01:00 would follow 00:30Z)."""
        return datetime.fromisoformat(self.when)
