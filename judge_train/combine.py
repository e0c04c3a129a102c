"""Fit the compact judge's combiners on held-out slices of the training pool, and choose their features by the
worst source, never by the pooled average.

Support: every held-out record of every support source (claim-level pool, attribution, general NLI) is scored the
way the judge scores at inference: its text split into claims (``decompose``; NLI hypotheses and single claims are
one claim), each claim against its candidate windows and the whole evidence (eval.metrics.claim_candidates), giving
one feature row per claim (eval.judges.nli.SUPPORT_FEATURES). A record's score is the minimum over its claims
(one unsupported claim sinks it), so the logistic regression is fit multiple-instance style: every claim of a
supported record is a positive; the one claim of an unsupported record that the current model finds least supported
is its negative (two rounds). Sources weigh the same, however many rows they have.

Feature choice: every subset containing the cross-encoder is scored by leave-one-source-out AUROC (fit on the other
sources, measured on the one left out: transfer to a kind of data the combiner never saw) at the record level, and
the subset with the highest **minimum over sources** wins (ties: fewer features). The report also gives 5-fold
cross-validated AUROC per source, each feature alone, and the lexical baseline (``lexical_win``), so a source where
the combiner does not beat word overlap is visible.

Relevance: (question, passage) held-out examples of the relevance sources, features RELEVANCE_FEATURES, the same
worst-source choice; NoMIRACL's passage sets are scored too (a set's score is its best passage's).
"""
from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from eval.claims import decompose
from judge_train.data import ATOMIC_SOURCES, NLI_SOURCES, PoolRecord, heldout, heldout_half
from eval.judges.base import ClaimItem
from eval.judges.nli import RELEVANCE_FEATURES, SUPPORT_FEATURES, CompactJudgeScorer
from eval.meta.stats import auroc
from eval.metrics.verify import claim_candidates

Log = Callable[[str], None]
MAX_CLAIMS = 6  # claims per record scored (long answers): the first ones


@dataclass
class ClaimRows:
    """Feature rows of claims, and for each the record (index) it belongs to."""

    x: np.ndarray  # (n_claims, n_features)
    record: np.ndarray  # (n_claims,) record index
    label: np.ndarray  # (n_records,) 0/1
    source: list[str]  # (n_records,)
    group: list[str]  # (n_records,)


def heldout_records(records: Sequence[PoolRecord], percent: int, per_label: int, seed: int,
                    half: str = "calibrate") -> list[PoolRecord]:
    """Up to ``per_label`` records of each label of each source from one half of the held-out slice (seeded)."""
    rng = random.Random(seed)
    out: list[PoolRecord] = []
    for source in sorted({r.source for r in records}):
        for label in (0, 1):
            rows = [r for r in records if r.source == source and r.label == label and heldout(r.group, percent)
                    and heldout_half(r.group) == half]
            rng.shuffle(rows)
            out += rows[:per_label]
    return out


def record_claims(rec: PoolRecord) -> list[str]:
    if rec.source in NLI_SOURCES or rec.source in ATOMIC_SOURCES:
        return [rec.text.strip()]
    return (decompose(rec.text) or [rec.text.strip()])[:MAX_CLAIMS]


def claim_rows(scorer: CompactJudgeScorer, records: Sequence[PoolRecord], log: Log, batch: int = 256) -> ClaimRows:
    items: list[ClaimItem] = []
    owner: list[int] = []
    for i, rec in enumerate(records):
        claims = record_claims(rec)
        per_claim, evidence = claim_candidates(claims, [("e", rec.evidence)])
        for claim, chosen in zip(claims, per_claim):
            items.append(ClaimItem(claim, [w for _, w in chosen], evidence))
            owner.append(i)
    rows = []
    for s in range(0, len(items), batch):
        rows.append(scorer.claim_features(items[s : s + batch])[0])
        if (s // batch) % 10 == 0:
            log(f"  claim features {min(s + batch, len(items))}/{len(items)}")
    x = np.concatenate(rows) if rows else np.zeros((0, len(SUPPORT_FEATURES)))
    return ClaimRows(x, np.asarray(owner), np.asarray([r.label for r in records]), [r.source for r in records],
                     [r.group for r in records])


# ----------------------------------------------------------------------------------------------- the regression


def standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean, scale = x.mean(axis=0), x.std(axis=0)
    return mean, np.where(scale > 1e-9, scale, 1.0)


def source_weights(sources: Sequence[str]) -> np.ndarray:
    """Every source weighs the same in the fit, however many rows it has."""
    counts: dict[str, int] = {}
    for s in sources:
        counts[s] = counts.get(s, 0) + 1
    return np.array([len(sources) / (len(counts) * counts[s]) for s in sources])


def record_min(p: np.ndarray, record: np.ndarray, n_records: int) -> np.ndarray:
    out = np.full(n_records, np.inf)
    np.minimum.at(out, record, p)
    return np.where(np.isfinite(out), out, 0.0)


def fit_mil(x: np.ndarray, rows: ClaimRows, records: np.ndarray, rounds: int = 2, c: float = 1.0) -> dict:
    """Fit on the claims of ``records`` (indices): returns a combiner spec (standardised coefficients)."""
    from sklearn.linear_model import LogisticRegression

    in_fit = np.isin(rows.record, records)
    mean, scale = standardise(x[in_fit])
    z = (x - mean) / scale
    src = np.array(rows.source)
    w_src = dict(zip(*np.unique(src[records], return_counts=True)))
    n_src = len(w_src)
    p = z[:, 0]  # first round: the claim the cross-encoder likes least (features[0] is always the cross-encoder)
    model = None
    for _ in range(rounds):
        xs, ys, ws = [], [], []
        for r in records:
            claims = np.flatnonzero(rows.record == r)
            if claims.size == 0:
                continue
            weight = len(records) / (n_src * w_src[src[r]])
            if rows.label[r] == 1:
                xs.append(z[claims])
                ys += [1] * claims.size
                ws += [weight / claims.size] * claims.size
            else:
                k = claims[int(np.argmin(p[claims]))]
                xs.append(z[k : k + 1])
                ys.append(0)
                ws.append(weight)
        xa = np.concatenate(xs)
        model = LogisticRegression(C=c, max_iter=2000).fit(xa, np.array(ys), sample_weight=np.array(ws))
        p = model.decision_function(z)
    assert model is not None
    return {"coef": model.coef_[0].round(6).tolist(), "intercept": round(float(model.intercept_[0]), 6),
            "mean": mean.round(6).tolist(), "scale": scale.round(6).tolist()}


def _predict(spec: dict, x: np.ndarray) -> np.ndarray:
    z = (x - np.asarray(spec["mean"])) / np.asarray(spec["scale"])
    return 1 / (1 + np.exp(-(z @ np.asarray(spec["coef"]) + spec["intercept"])))


def per_source_auroc(record_scores: np.ndarray, rows: ClaimRows, mask: np.ndarray | None = None) -> dict:
    out = {}
    src = np.array(rows.source)
    for s in sorted(set(rows.source)):
        m = (src == s) if mask is None else (src == s) & mask
        a = auroc(record_scores[m], rows.label[m]) if m.any() else None
        out[s] = None if a is None else round(a, 4)
    vals = [v for v in out.values() if v is not None]
    out["min"] = min(vals) if vals else None
    return out


def loso(x: np.ndarray, rows: ClaimRows, rounds: int = 2) -> np.ndarray:
    """Record scores where each source is scored by a combiner fit on the other sources only."""
    src = np.array(rows.source)
    out = np.zeros(len(rows.label))
    for s in sorted(set(rows.source)):
        train = np.flatnonzero(src != s)
        spec = fit_mil(x, rows, train, rounds)
        test = np.flatnonzero(src == s)
        claim_p = _predict(spec, x)
        out[test] = record_min(claim_p, rows.record, len(rows.label))[test]
    return out


def cross_validated(x: np.ndarray, rows: ClaimRows, folds: int = 5, rounds: int = 2) -> np.ndarray:
    """Record scores from a combiner fit on the other folds (folds by group, so a group never straddles)."""
    import hashlib

    fold = np.array([int(hashlib.sha256(g.encode()).hexdigest()[:8], 16) % folds for g in rows.group])
    out = np.zeros(len(rows.label))
    for f in range(folds):
        spec = fit_mil(x, rows, np.flatnonzero(fold != f), rounds)
        test = np.flatnonzero(fold == f)
        out[test] = record_min(_predict(spec, x), rows.record, len(rows.label))[test]
    return out


def choose_features(rows: ClaimRows, names: Sequence[str], log: Log) -> tuple[list[str], dict]:
    """The subset (always with names[0], the cross-encoder) with the best worst-source leave-one-source-out AUROC."""
    others = list(names[1:])
    table: dict[str, dict] = {}
    best: tuple[float, int, list[str]] | None = None
    for k in range(len(others) + 1):
        for combo in itertools.combinations(others, k):
            cand = [names[0], *combo]
            cols = [names.index(n) for n in cand]
            per = per_source_auroc(loso(rows.x[:, cols], rows), rows)
            table["+".join(cand)] = per
            key = (per["min"] or 0.0, -len(cand), cand)
            if best is None or key[:2] > best[:2]:
                best = key
    assert best is not None
    log(f"  features by worst-source LOSO AUROC: {'+'.join(best[2])} (min {best[0]:.4f})")
    return best[2], table


def fit_support(scorer: CompactJudgeScorer, records: Sequence[PoolRecord], log: Log) -> tuple[dict, dict]:
    """The support combiner spec and its report."""
    rows = claim_rows(scorer, records, log)
    names = list(SUPPORT_FEATURES)
    chosen, table = choose_features(rows, names, log)
    cols = [names.index(n) for n in chosen]
    spec = {"features": chosen, **fit_mil(rows.x[:, cols], rows, np.arange(len(rows.label)))}
    singles = {n: per_source_auroc(record_min(rows.x[:, i] * (-1 if n.endswith(("missing", "flip")) else 1),
                                              rows.record, len(rows.label)), rows) for i, n in enumerate(names)}
    report = {"n_records": len(rows.label), "n_claims": int(rows.x.shape[0]), "features_chosen": chosen,
              "combiner_loso": table["+".join(chosen)],
              "combiner_cv": per_source_auroc(cross_validated(rows.x[:, cols], rows), rows),
              "feature_alone": singles, "subsets_loso": table,
              "standardised_coef": dict(zip(chosen, spec["coef"]))}
    spec["fit_on"] = (f"{len(rows.label)} held-out records ({rows.x.shape[0]} claims) of "
                      f"{len(set(rows.source))} sources, weighted equally; multiple-instance (min over claims)")
    return spec, report


# ----------------------------------------------------------------------------------------------------- relevance


def fit_relevance(scorer: CompactJudgeScorer, pairs: Sequence[tuple[str, str, int, str, str]], log: Log,
                  sets: Sequence = ()) -> tuple[dict, dict]:
    """(question, passage, label, source, group) held-out pairs -> the relevance combiner spec and report."""
    if not pairs:
        return {}, {}
    x = scorer.relevance_features([(q, p) for q, p, *_ in pairs])
    log(f"  relevance features for {len(pairs)} pairs")
    rows = ClaimRows(x, np.arange(len(pairs)), np.array([lab for _, _, lab, _, _ in pairs]),
                     [s for *_, s, _ in pairs], [g for *_, g in pairs])
    names = list(RELEVANCE_FEATURES)
    chosen, table = choose_features(rows, names, log)
    cols = [names.index(n) for n in chosen]
    spec = {"features": chosen, **fit_mil(x[:, cols], rows, np.arange(len(pairs)), rounds=1)}
    report = {"n": len(pairs), "features_chosen": chosen, "combiner_loso": table["+".join(chosen)],
              "combiner_cv": per_source_auroc(cross_validated(x[:, cols], rows, rounds=1), rows),
              "feature_alone": {n: per_source_auroc(x[:, i], rows) for i, n in enumerate(names)},
              "subsets_loso": table, "standardised_coef": dict(zip(chosen, spec["coef"]))}
    if sets:
        flat = [(s.question, p) for s in sets for p in s.passages]
        own = [k for k, s in enumerate(sets) for _ in s.passages]
        p = _predict(spec, scorer.relevance_features(flat)[:, cols])
        best = np.full(len(sets), -np.inf)
        np.maximum.at(best, np.asarray(own), p)
        a = auroc(best, [s.label for s in sets])
        report["nomiracl_sets_auroc"] = None if a is None else round(a, 4)
        report["nomiracl_sets_n"] = len(sets)
    spec["fit_on"] = f"{len(pairs)} held-out (question, passage) pairs of {len(set(rows.source))} sources"
    return spec, report
