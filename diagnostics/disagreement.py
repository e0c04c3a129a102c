"""Where metrics disagree with each other, and where judges disagree on the same claim, with plain-language
explanations for learners."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from corpora.records import Judgement, MetricResult
from diagnostics.verdicts import Thresholds, axis, result, trace_of
from eval.answerability import refused

# the two buckets past a view's four cells: every judged sample is counted in exactly one place
UNMEASURED, LEFT_OUT = "unmeasured", "left_out"
BUCKETS = (UNMEASURED, LEFT_OUT)

EXPLANATIONS: dict[str, str] = {
    "grounded_right": "Grounded and right: every claim is backed by the retrieved text and the answer matches the "
                      "reference. This is the case RAG is built for.",
    "grounded_wrong": "Grounded yet wrong: the answer faithfully repeats the retrieved text, but that text was stale, "
                      "conflicting or about something else. Groundedness only checks the answer against the context, "
                      "never the context against the truth, so it cannot see this failure: check retrieval and the "
                      "freshness of the corpus.",
    "ungrounded_right": "Ungrounded yet right: the answer is correct but the context does not back it; the model used "
                        "what it learned in training (parametric knowledge). Right today, but unverifiable and a "
                        "hallucination risk on questions the model does not know.",
    "ungrounded_wrong": "Ungrounded and wrong: a classic hallucination. The model said things the context does not "
                        "support and they are false. Look at whether retrieval found anything useful.",
    "precise_ungrounded": "Relevant context, ungrounded answer: retrieval did its job but the model did not use it "
                          "(or contradicted it). A generation problem: prompt, model size, or context ordering.",
    "noisy_grounded": "Noisy context, grounded answer: most chunks were irrelevant but the model picked the right one. "
                      "It worked, but noise costs tokens and raises the chance of a wrong pick.",
    "relevant_wrong": "On-topic yet wrong: the answer addresses the question (high relevance) but is incorrect. Answer "
                      "relevance measures whether an answer is about the question, never whether it is true.",
    "offtopic_right": "Off-topic yet right: a judge found the answer unrelated to the question but it matches the "
                      "reference; usually a terse answer or a judge artefact worth a look.",
    UNMEASURED: "Unmeasured: a metric of this view has no value for the sample (the judge could not decide, the run "
                "did not evaluate it, or the pipeline failed). Neither high nor low, it is in no quadrant.",
    LEFT_OUT: "Left out: refusals and blocked answers (they make no claim to grade), partial answers on the "
              "correctness axis (the classifier's 'incomplete': neither right nor wrong), and metrics that do not "
              "apply to the sample (no reference answer, nothing retrieved).",
    "judge_disagreement": "Two judges looked at the same claim and the same context and reached different verdicts. "
                          "Neither is ground truth: the meta-evaluation table says which judge agrees with people more "
                          "often on data like yours.",
}


@dataclass(frozen=True)
class View:
    """Two metrics against each other: a quadrant name per (x says yes, y says yes), each read as
    diagnostics.verdicts.axis reads it (groundedness and correctness as the classifier does)."""

    key: str
    x: str
    y: str
    names: dict[tuple[bool, bool], str]

    @property
    def cuts(self) -> tuple[float, float]:
        th = Thresholds()
        return th.cut(self.x), th.cut(self.y)


VIEWS = (
    View("groundedness_x_correctness", "groundedness", "answer_correctness", {
        (True, True): "grounded_right", (True, False): "grounded_wrong",
        (False, True): "ungrounded_right", (False, False): "ungrounded_wrong"}),
    View("context_precision_x_groundedness", "context_precision", "groundedness", {
        (True, True): "precise_grounded", (True, False): "precise_ungrounded",
        (False, True): "noisy_grounded", (False, False): "noisy_ungrounded"}),
    View("answer_relevance_x_correctness", "answer_relevance", "answer_correctness", {
        (True, True): "relevant_right", (True, False): "relevant_wrong",
        (False, True): "offtopic_right", (False, False): "offtopic_wrong"}),
)


# where each failure category is shown in the groundedness x correctness view: the four cells, the unmeasured bucket,
# and for a sample left out, why ("refusal", "blocked", "partial", "not_applicable"). The classifier refines a cell
# (a missed refusal is a wrong answer, context_ignored a wrong one the context could have made right), never
# contradicts it: ok is grounded and right, grounded_yet_hallucinated grounded and wrong, and an ungrounded
# hallucination never grounded. tests/diagnostics/test_quadrant_consistency.py checks it on every combination.
SHOWN_IN: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in {
    "ok": {"grounded_right", "refusal", "not_applicable"},
    "grounded_yet_hallucinated": {"grounded_wrong"},
    "ungrounded_hallucination": {"ungrounded_right", "ungrounded_wrong", UNMEASURED, "partial", "not_applicable"},
    "context_ignored": {"ungrounded_wrong", UNMEASURED, "refusal", "not_applicable"},
    "retrieval_miss": {"ungrounded_right", "ungrounded_wrong", UNMEASURED, "partial", "refusal", "not_applicable"},
    "ranked_out": {"ungrounded_right", "ungrounded_wrong", UNMEASURED, "partial", "refusal", "not_applicable"},
    "missed_refusal": {"grounded_wrong", "ungrounded_wrong", UNMEASURED, "not_applicable"},
    "wrong_refusal": {"refusal"},
    "guardrail_block": {"blocked"},
    "off_topic": {UNMEASURED, "not_applicable"},
    "incomplete": {"partial", UNMEASURED, "not_applicable"},
    "noisy_context": {"refusal"},  # a correct refusal the context does not back: the noise is what is left
    "unmeasured": {UNMEASURED, "refusal", "not_applicable"},
}.items()}


@dataclass(frozen=True)
class Placement:
    """Where one sample is shown in a view: ``cell`` is one of the view's four names, UNMEASURED or LEFT_OUT; ``why``
    says why it is not in a cell (the unmeasured metric, or refusal / blocked / partial / not_applicable); ``x`` and
    ``y`` are the values read (None where unmeasured)."""

    sample_id: str
    cell: str
    x: float | None
    y: float | None
    why: str | None = None

    @property
    def where(self) -> str:
        """The cell, UNMEASURED, or for a sample left out the reason (SHOWN_IN's keys)."""
        return (self.why or LEFT_OUT) if self.cell == LEFT_OUT else self.cell


def _value(r: MetricResult | None) -> float | None:
    return r.value if r is not None and r.measured else None


def place(j: Judgement, view: View, judges: tuple[str | None, str | None] = (None, None),
          th: Thresholds | None = None) -> Placement:
    """The one place of sample ``j`` in ``view``. ``judges`` name the judge read on each axis (None: per sample the
    classifier's pick, so the counts are `ragdoctor diagnose`'s). A blocked answer or a refusal (told by its text too:
    a plain JSONL row is always "answered") is left out, as is a partial answer on the correctness axis and a metric
    that does not apply; a failed pipeline, or a metric with no value, is unmeasured; the rest is in the cell of the
    two readings of diagnostics.verdicts.axis."""
    th = th or Thresholds()
    t = trace_of(j)
    rx, ry = result(j, view.x, judges[0]), result(j, view.y, judges[1])
    x, y = _value(rx), _value(ry)

    def out(cell: str, why: str) -> Placement:
        return Placement(j.sample_id, cell, x, y, why)

    if t.outcome == "blocked":
        return out(LEFT_OUT, "blocked")
    if t.outcome == "error":
        return out(UNMEASURED, "the pipeline failed for this sample")
    if refused(t):
        return out(LEFT_OUT, "refusal")
    ax, ay = axis(view.x, rx, t, th), axis(view.y, ry, t, th)
    if "unmeasured" in (ax, ay):
        return out(UNMEASURED, view.x if ax == "unmeasured" else view.y)
    if "not_applicable" in (ax, ay):
        return out(LEFT_OUT, "not_applicable")
    if "partial" in (ax, ay):
        return out(LEFT_OUT, "partial")
    return Placement(j.sample_id, view.names[(ax == "yes", ay == "yes")], x, y)


def placements(judgements: list[Judgement], view: View, judges: tuple[str | None, str | None] = (None, None),
               th: Thresholds | None = None) -> list[Placement]:
    th = th or Thresholds()
    return [place(j, view, judges, th) for j in judgements]


def quadrant_table(places: list[Placement], view: View, examples: int = 10) -> dict:
    """Per cell of ``view`` and per bucket (unmeasured, left out): count, example ids and explanation; the buckets
    also count their reasons (``why``)."""
    out: dict[str, dict] = {n: {"count": 0, "examples": []} for n in [*view.names.values(), *BUCKETS]}
    for name in BUCKETS:
        out[name]["why"] = {}
    for p in places:
        entry = out[p.cell]
        entry["count"] += 1
        if len(entry["examples"]) < examples:
            entry["examples"].append(p.sample_id)
        if p.why is not None:
            entry["why"][p.why] = entry["why"].get(p.why, 0) + 1
    for name, entry in out.items():
        entry["explanation"] = EXPLANATIONS.get(name, "")
    return out


def metric_disagreements(judgements: list[Judgement], th: Thresholds | None = None) -> dict:
    """The groundedness x correctness quadrant and two more metric-vs-metric views (VIEWS): per cell the count and
    example ids, and two buckets besides, each with its count: ``unmeasured`` (a metric of the view has no value) and
    ``left_out`` (refusals, by outcome or by their text, and blocked answers make no claim to grade; partial answers
    on the correctness axis, the classifier's 'incomplete', are neither right nor wrong; a metric that does not
    apply). Every judged sample is counted once per view. ``points``: the placed samples of the first view. ``th``:
    the classifier's thresholds (diagnostics.report.diagnose passes its own)."""
    th = th or Thresholds()
    places = {v.key: placements(judgements, v, th=th) for v in VIEWS}
    out: dict = {v.key: quadrant_table(places[v.key], v) for v in VIEWS}
    cells = set(VIEWS[0].names.values())
    out["points"] = {VIEWS[0].key: [{"sample_id": p.sample_id, "x": p.x, "y": p.y, "quadrant": p.cell}
                                    for p in places[VIEWS[0].key] if p.cell in cells]}
    return out


def _verdict(claim: dict) -> dict:
    return {"verdict": claim["verdict"], "score": claim.get("score"), "chunk_id": claim.get("chunk_id"),
            "sentence": claim.get("sentence")}


def _well_formed(claims: object) -> list[dict]:
    """The claims of an evidence list that name their claim and verdict (a hand-edited results line may not)."""
    return [c for c in claims if isinstance(c, dict) and isinstance(c.get("claim"), str)
            and isinstance(c.get("verdict"), str)] if isinstance(claims, list) else []


def judge_disagreements(judgements: list[Judgement], metric: str = "groundedness", limit: int = 200) -> dict:
    """Claim-level verdicts of every pair of judges on the same claims: a confusion table and the disagreeing claims."""
    by_pair: dict[tuple[str, str], dict] = defaultdict(
        lambda: {"agree": 0, "disagree": 0, "confusion": defaultdict(int), "examples": []})
    for j in judgements:
        results = [r for r in j.results if r.metric == metric and r.measured and r.evidence.get("claims")]
        for i, a in enumerate(results):
            for b in results[i + 1:]:
                key = (min(a.judge, b.judge), max(a.judge, b.judge))
                ra, rb = (a, b) if key[0] == a.judge else (b, a)
                cb = {c["claim"]: c for c in _well_formed(rb.evidence["claims"])}
                for ca in _well_formed(ra.evidence["claims"]):
                    other = cb.get(ca["claim"])
                    if other is None:
                        continue
                    va, vb = ca["verdict"], other["verdict"]
                    entry = by_pair[key]
                    entry["confusion"][f"{va}|{vb}"] += 1
                    if (va == "supported") == (vb == "supported"):
                        entry["agree"] += 1
                        continue
                    entry["disagree"] += 1
                    if len(entry["examples"]) < limit:
                        entry["examples"].append({"sample_id": j.sample_id, "claim": ca["claim"],
                                                  key[0]: _verdict(ca), key[1]: _verdict(other)})
    out = {}
    for (ja, jb), e in by_pair.items():
        total = e["agree"] + e["disagree"]
        out[f"{ja}_vs_{jb}"] = {"judges": [ja, jb], "claims": total, "agreement": e["agree"] / total if total else None,
                                "confusion": dict(e["confusion"]), "examples": e["examples"],
                                "explanation": EXPLANATIONS["judge_disagreement"]}
    return out
