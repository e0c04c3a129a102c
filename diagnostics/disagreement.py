"""Where metrics disagree with each other, and where judges disagree on the same claim, with plain-language
explanations for learners."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from corpora.records import Judgement, MetricResult
from diagnostics.classify import Thresholds, correctness_verdict, pick
from eval.answerability import refused, unanswerable
from eval.metrics import get

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
    "judge_disagreement": "Two judges looked at the same claim and the same context and reached different verdicts. "
                          "Neither is ground truth: the meta-evaluation table says which judge agrees with people more "
                          "often on data like yours.",
}


@dataclass(frozen=True)
class View:
    """Two metrics against each other, each cut at its declared verdict cut: a quadrant name per (x yes, y yes)."""

    key: str
    x: str
    y: str
    names: dict[tuple[bool, bool], str]

    @property
    def cuts(self) -> tuple[float, float]:
        return get(self.x).cut, get(self.y).cut


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


Point = tuple[str, float, float, bool, bool]  # sample id, x, y, x is yes, y is yes


def _quadrant(pairs: list[Point], view: View) -> dict:
    out: dict[str, dict] = {n: {"count": 0, "examples": []} for n in view.names.values()}
    for sid, _x, _y, x_yes, y_yes in pairs:
        name = view.names[(x_yes, y_yes)]
        out[name]["count"] += 1
        if len(out[name]["examples"]) < 10:
            out[name]["examples"].append(sid)
    for name in out:
        out[name]["explanation"] = EXPLANATIONS.get(name, "")
    return out


def _yes(j: Judgement, metric: str, r: MetricResult, th: Thresholds) -> bool | None:
    """Whether ``metric`` says yes for this sample. Answer correctness is read as the classifier reads it
    (classify.correctness_verdict): right is yes, wrong is no, and a partial answer (the classifier's 'incomplete') is
    neither (None: left out of the view), so a quadrant's explanation never contradicts the diagnosis. An answer to a
    question known unanswerable is wrong (it should have refused). Other metrics: at or above their cut."""
    if metric != "answer_correctness":
        return r.value is not None and r.value >= get(metric).cut
    if j.trace is not None and unanswerable(j.trace) is True:
        return False
    verdict = correctness_verdict(r, th)
    return None if verdict == "incomplete" else verdict == "right"


def _values(judgements: list[Judgement], a: str, b: str, th: Thresholds) -> list[Point]:
    """Both metrics measured, the trace neither blocked nor a refusal (told by its text too: a plain JSONL row is
    always 'answered'), and each metric's yes/no known."""
    pairs = []
    for j in judgements:
        ra, rb = pick(j, a), pick(j, b)
        if ra is None or rb is None or ra.value is None or rb.value is None or not ra.measured or not rb.measured:
            continue
        if j.trace is not None and (j.trace.outcome == "blocked" or refused(j.trace)):
            continue
        xa, yb = _yes(j, a, ra, th), _yes(j, b, rb, th)
        if xa is not None and yb is not None:
            pairs.append((j.sample_id, ra.value, rb.value, xa, yb))
    return pairs


def metric_disagreements(judgements: list[Judgement]) -> dict:
    """The groundedness x correctness quadrant and two more metric-vs-metric views (VIEWS), with counts and example
    ids; refusals (by outcome or by their text) and blocked answers are left out (they make no claim to grade), and so
    are partial answers on the correctness axis (the classifier's 'incomplete': neither right nor wrong)."""
    th = Thresholds()
    values = {v.key: _values(judgements, v.x, v.y, th) for v in VIEWS}
    out: dict = {v.key: _quadrant(values[v.key], v) for v in VIEWS}
    out["points"] = {"groundedness_x_correctness": [{"sample_id": s, "x": x, "y": y}
                                                    for s, x, y, _, _ in values["groundedness_x_correctness"]]}
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
