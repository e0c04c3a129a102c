"""Fit the compact judge's combiners on held-out slices of the training pool, and choose their features by the
worst source, never by the pooled average.

Support: every held-out record of every support source (claim-level pool, attribution, general NLI) is scored the
way the judge scores at inference: its text split into claims (``decompose``; NLI hypotheses and single claims are
one claim), each claim against its candidate windows and the whole evidence (eval.metrics.claim_candidates), giving
one feature row per claim (eval.judges.nli.SUPPORT_FEATURES; nli_max too with a general-NLI model). A record's score
is the minimum over its claims (one unsupported claim sinks it), so the logistic regression is fit multiple-instance style: every claim of a
supported record is a positive; the one claim of an unsupported record that the current model finds least supported
is its negative (two rounds). Sources weigh the same, however many rows they have.

Feature choice: every subset containing the cross-encoder is scored by leave-one-source-out AUROC (fit on the other
sources, measured on the one left out: transfer to a kind of data the combiner never saw) at the record level, and
the subset with the highest **minimum over sources** wins (ties: fewer features). The report also gives 5-fold
cross-validated AUROC per source, each feature alone, and the lexical baseline (``lexical_win``), so a source where
the combiner does not beat word overlap is visible.

Relevance: (question, passage) held-out examples of the relevance sources, features RELEVANCE_FEATURES, the same
worst-source choice; NoMIRACL's passage sets are scored too (a set's score is its best passage's).

Too little to fit on: a combiner is never fit on no records or on records of one label (``Unfittable``; the callers
in judge_train/package.py check ``fit_problem`` before any work). An AUROC that cannot be measured (a source of one
label, a leave-one-source-out fit whose other sources hold one label) is None, and its reason goes in the ``why``
dict the caller passes (a report's ``unmeasured``), never 0 or NaN; when no source has enough records to decide, the
features are not chosen: the cross-encoder alone, said in ``why["features_chosen"]``.
"""
from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

from corpora.errors import InputError
from eval.claims import decompose
from judge_train.data import ATOMIC_SOURCES, NLI_SOURCES, PoolRecord, heldout, heldout_half
from eval.judges.base import ClaimItem
from eval.judges.nli import FEATURE_SIGNS, RELEVANCE_FEATURES, CompactJudgeScorer
from eval.meta.stats import auroc
from eval.metrics.verify import claim_candidates

Log = Callable[[str], None]
MAX_CLAIMS = 6  # claims per record scored (long answers): the first ones


class Unfittable(InputError):
    """A combiner asked to fit on records that cannot give one: none, or of one label only (one line: why)."""

    def __init__(self, message: str):
        super().__init__(None, message)


def fit_problem(labels: Sequence[int] | np.ndarray, what: str = "record",
                names: tuple[str, str] = ("not supported", "supported")) -> str | None:
    """Why no combiner (and no AUROC) can come from records with these 0/1 ``labels``: there are none, or they are of
    one label only; None when both labels are there. ``what``: the records' name; ``names``: the labels' (0, 1)."""
    n = len(labels)
    n_pos = int(sum(1 for v in labels if v == 1))
    if n == 0:
        return f"no {what}s"
    if n_pos in (0, n):
        return f"{n} {what}{'s' if n != 1 else ''}, all {names[1] if n_pos else names[0]}"
    return None


@dataclass
class ClaimRows:
    """Feature rows of claims, and for each the record (index) it belongs to."""

    x: np.ndarray  # (n_claims, n_features)
    record: np.ndarray  # (n_claims,) record index
    label: np.ndarray  # (n_records,) 0/1
    source: list[str]  # (n_records,)
    group: list[str]  # (n_records,)
    signs: tuple[int, ...] = ()  # per feature column: +1 more means supported, -1 less, 0 free (empty: all free)

    def signs_of(self, cols: Sequence[int]) -> list[int]:
        return [self.signs[i] if self.signs else 0 for i in cols]


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
    names = scorer.support_features
    x = np.concatenate(rows) if rows else np.zeros((0, len(names)))
    return ClaimRows(x, np.asarray(owner), np.asarray([r.label for r in records]), [r.source for r in records],
                     [r.group for r in records], tuple(FEATURE_SIGNS[f] for f in names))


# ----------------------------------------------------------------------------------------------- the regression


def standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if x.shape[0] == 0:  # numpy would say "Mean of empty slice" and give NaN
        raise Unfittable("no feature rows to standardise")
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


def logistic_fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, signs: Sequence[int], c: float = 1.0
                 ) -> tuple[np.ndarray, float]:
    """Weighted L2 logistic regression (sklearn's convention: C * weighted loss + ||coef||^2 / 2) whose coefficients
    keep the sign each feature's meaning gives it (+1: more means supported, -1: less, 0: free): a feature either
    pushes the way it should or is dropped (0), so collinear features cannot trade opposite signs that fit the
    calibration sources and break on another kind of text."""
    from scipy.optimize import minimize

    d = x.shape[1]
    y_pm = np.where(y > 0, 1.0, -1.0)

    from scipy.special import expit

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        coef, b = theta[:d], theta[d]
        m = y_pm * (x @ coef + b)
        sp = np.logaddexp(0.0, -m)
        g = -w * y_pm * expit(-m)  # d loss / d (x.coef + b); expit: no overflow warning on a large margin
        return c * float(w @ sp) + 0.5 * float(coef @ coef), np.append(c * (x.T @ g) + coef, c * g.sum())

    bounds = [(0.0, None) if s > 0 else (None, 0.0) if s < 0 else (None, None) for s in signs] + [(None, None)]
    res = minimize(loss, np.zeros(d + 1), jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": 2000})
    return res.x[:d], float(res.x[d])


def fit_mil(x: np.ndarray, rows: ClaimRows, records: np.ndarray, rounds: int = 2, c: float = 1.0,
            signs: Sequence[int] | None = None) -> dict:
    """Fit on the claims of ``records`` (indices): returns a combiner spec (standardised coefficients). Unfittable
    when those records (with at least one claim) are none or of one label only."""
    signs = [0] * x.shape[1] if signs is None else list(signs)
    records = np.asarray(records, dtype=int)
    with_claims = records[np.isin(records, rows.record)]
    problem = fit_problem(rows.label[with_claims], names=("negative", "positive"))
    if problem:
        raise Unfittable(problem)
    in_fit = np.isin(rows.record, records)
    mean, scale = standardise(x[in_fit])
    z = (x - mean) / scale
    src = np.array(rows.source)
    w_src = dict(zip(*np.unique(src[records], return_counts=True)))
    n_src = len(w_src)
    p = z[:, 0]  # first round: the claim the cross-encoder likes least (features[0] is always the cross-encoder)
    coef, b = np.zeros(x.shape[1]), 0.0
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
        wa = np.array(ws)
        coef, b = logistic_fit(np.concatenate(xs), np.array(ys), wa / wa.mean(), signs, c)
        p = z @ coef + b
    return {"coef": coef.round(6).tolist(), "intercept": round(b, 6), "mean": mean.round(6).tolist(),
            "scale": scale.round(6).tolist()}


def _predict(spec: dict, x: np.ndarray) -> np.ndarray:
    from scipy.special import expit  # no overflow warning for a point far from the fit's records

    z = (x - np.asarray(spec["mean"])) / np.asarray(spec["scale"])
    return expit(z @ np.asarray(spec["coef"]) + spec["intercept"])


MIN_PER_LABEL = 20  # a source with fewer held-out records of either label is reported, but cannot decide a choice


def eligible_sources(rows: ClaimRows, min_per_label: int = MIN_PER_LABEL) -> set[str]:
    src = np.array(rows.source)
    return {s for s in set(rows.source)
            if min(int(((src == s) & (rows.label == k)).sum()) for k in (0, 1)) >= min_per_label}


def too_few_to_decide(rows: ClaimRows, min_per_label: int = MIN_PER_LABEL) -> str:
    """Why no source can decide a choice or a worst source (no source is in eligible_sources), with the best one."""
    src = np.array(rows.source)
    counts = {s: tuple(int(((src == s) & (rows.label == k)).sum()) for k in (0, 1)) for s in set(rows.source)}
    best = max(sorted(counts), key=lambda s: min(counts[s]), default=None)
    most = f" (the most: {best} with {counts[best][1]} positive and {counts[best][0]} negative)" if best else ""
    return f"no source has {min_per_label} held-out records of each label{most}"


def per_source_auroc(record_scores: np.ndarray, rows: ClaimRows, mask: np.ndarray | None = None,
                     why: dict[str, str] | None = None, unscored: dict[str, str] | None = None) -> dict:
    """AUROC per source, and 'min' over the sources with enough records to decide (eligible_sources). A value that
    cannot be measured (no records, one label, a record left unscored: NaN in ``record_scores``) is None, and ``why``
    (when given) gets its reason under the source's name (``unscored``: the reason per source for unscored records,
    e.g. from loso)."""
    out: dict[str, float | None] = {}
    reasons: dict[str, str] = {}
    src = np.array(rows.source)
    for s in sorted(set(rows.source)):
        m = (src == s) if mask is None else (src == s) & mask
        problem = fit_problem(rows.label[m], "held-out record", ("negative", "positive"))
        bad = int((~np.isfinite(record_scores[m])).sum())
        if problem:
            reasons[s] = f"{problem}: AUROC needs both labels"
        elif bad:
            reasons[s] = (unscored or {}).get(s) or f"{bad} of {int(m.sum())} records have no finite score"
        a = None if s in reasons else auroc(record_scores[m], rows.label[m])
        out[s] = None if a is None else round(a, 4)
    ok = eligible_sources(rows)
    vals = [v for s, v in out.items() if v is not None and s in ok]
    out["min"] = min(vals) if vals else None
    if out["min"] is None:
        reasons["min"] = (too_few_to_decide(rows) if not ok else
                          "no source with enough records to decide was measured (" +
                          "; ".join(f"{s}: {reasons.get(s, 'unmeasured')}" for s in sorted(ok)) + ")")
    if why is not None:
        why.update(reasons)
    return out


def merge_why(into: dict[str, str], prefix: str, why: dict[str, str]) -> None:
    """``why``'s reasons into a report's ``unmeasured``, each under ``prefix.key`` unless ``into`` already has the same
    reason under the bare key (a source of one label is unmeasured in every table: said once)."""
    for key, reason in why.items():
        if into.get(key) != reason:
            into[f"{prefix}.{key}"] = reason


def worst_margin(per: dict, baseline: dict) -> float | None:
    """The smallest lead over the baseline across the sources both have (negative: it loses somewhere)."""
    diffs = [per[s] - baseline[s] for s in per if s != "min" and per.get(s) is not None and baseline.get(s) is not None]
    return round(min(diffs), 4) if diffs else None


def loso(x: np.ndarray, rows: ClaimRows, rounds: int = 2, signs: Sequence[int] | None = None,
         why: dict[str, str] | None = None) -> np.ndarray:
    """Record scores where each source is scored by a combiner fit on the other sources only; NaN for a source whose
    other sources cannot give a fit (none, or one label), its reason in ``why`` (when given)."""
    src = np.array(rows.source)
    out = np.zeros(len(rows.label))
    for s in sorted(set(rows.source)):
        train = np.flatnonzero(src != s)
        test = np.flatnonzero(src == s)
        try:
            spec = fit_mil(x, rows, train, rounds, signs=signs)
        except Unfittable as exc:
            out[test] = np.nan
            if why is not None:
                why[s] = f"left out, the other sources hold {exc.message}: no combiner to score it"
            continue
        claim_p = _predict(spec, x)
        out[test] = record_min(claim_p, rows.record, len(rows.label))[test]
    return out


def cross_validated(x: np.ndarray, rows: ClaimRows, folds: int = 5, rounds: int = 2,
                    signs: Sequence[int] | None = None, why: dict[str, str] | None = None) -> np.ndarray:
    """Record scores from a combiner fit on the other folds (folds by group, so a group never straddles); NaN for the
    records of a fold whose other folds cannot give a fit, the reason under each of their sources in ``why``."""
    import hashlib

    fold = np.array([int(hashlib.sha256(g.encode()).hexdigest()[:8], 16) % folds for g in rows.group],
                    dtype=int).reshape(-1)
    out = np.zeros(len(rows.label))
    for f in range(folds):
        test = np.flatnonzero(fold == f)
        if test.size == 0:
            continue
        try:
            spec = fit_mil(x, rows, np.flatnonzero(fold != f), rounds, signs=signs)
        except Unfittable as exc:
            out[test] = np.nan
            for s in sorted({rows.source[i] for i in test}):
                if why is not None:
                    why.setdefault(s, f"the other {folds - 1} folds hold {exc.message}: records of this source's "
                                      "fold are not scored")
            continue
        out[test] = record_min(_predict(spec, x), rows.record, len(rows.label))[test]
    return out


def choose_features(rows: ClaimRows, names: Sequence[str], log: Log, baseline: str,
                    extra: Callable[..., dict] | None = None, extra_ok: Collection[str] = (),
                    max_features: int | None = None, why: dict[str, str] | None = None) -> tuple[list[str], dict]:
    """The subset (always with names[0], the cross-encoder) chosen by the worst source, never the average: the
    highest minimum over sources of its leave-one-source-out AUROC **minus the baseline's** (``baseline``: the
    lexical feature alone), i.e. the subset whose smallest lead over word overlap is largest; ties go to the higher
    worst-source AUROC, then to fewer features. Only sources with enough held-out records (eligible_sources) decide.
    ``extra(columns)`` may add more per-task AUROCs for a subset (e.g. passage sets scored by a combiner fit on the
    pairs, with their baseline under the same key in ``extra([baseline column])``); of its keys only those in
    ``extra_ok`` (the tasks with enough records, as for the sources) decide, the others are reported. ``max_features``: subsets of at
    most that many features beside the cross-encoder (None: every subset; 7 more features are 128 subsets, each fit
    once per source). ``why`` (when given) gets the reasons of the chosen subset's unmeasured values, under
    'combiner_loso.<source>', and, when no subset's worst source could be measured (too few records per source), the
    reason under 'features_chosen': the features are then not chosen, the cross-encoder alone is returned."""
    ok = eligible_sources(rows)
    base_col = names.index(baseline)
    base = per_source_auroc(record_min(rows.x[:, base_col], rows.record, len(rows.label)), rows)
    if extra is not None:
        base.update(extra([base_col], baseline_only=True))
    decides = set(ok) | set(extra_ok)
    base_ok = {s: v for s, v in base.items() if s in decides}
    others = list(names[1:])
    table: dict[str, dict] = {}
    whys: dict[str, dict[str, str]] = {}
    best: tuple | None = None
    largest = len(others) if max_features is None else min(len(others), max(0, max_features))
    for k in range(largest + 1):
        for combo in itertools.combinations(others, k):
            cand = [names[0], *combo]
            cols = [names.index(n) for n in cand]
            unscored: dict[str, str] = {}
            w: dict[str, str] = {}
            per = per_source_auroc(loso(rows.x[:, cols], rows, signs=rows.signs_of(cols), why=unscored), rows,
                                   why=w, unscored=unscored)
            if extra is not None:
                per.update(extra(cols))
                vals = [v for key, v in per.items() if key in decides and v is not None]
                per["min"] = min(vals) if vals else None
                if per["min"] is not None:
                    w.pop("min", None)
            per["margin"] = worst_margin({s: v for s, v in per.items() if s in base_ok}, base_ok)
            table["+".join(cand)] = per
            whys["+".join(cand)] = w
            # a measured lead beats an unmeasured one, then a measured worst AUROC; ties: fewer features
            key = (per["margin"] is not None, per["margin"] or 0.0, per["min"] is not None, per["min"] or 0.0,
                   -len(cand))
            if best is None or key > best[0]:
                best = (key, cand)
    assert best is not None
    (_, margin, _, worst, _), chosen = best
    table["baseline:" + baseline] = base
    if table["+".join(chosen)]["min"] is None:  # nothing decided: every subset's worst source is unmeasured
        chosen = [names[0]]
        reason = whys["+".join(chosen)].get("min", "no source's AUROC could be measured")
        log(f"  features not chosen ({reason}): the cross-encoder alone, {names[0]}")
        if why is not None:
            why["features_chosen"] = f"not chosen: {reason}; the cross-encoder alone ({names[0]})"
    else:
        lead = "unmeasured" if table["+".join(chosen)]["margin"] is None else f"{margin:+.4f}"
        log(f"  features by the worst source's lead over {baseline} (LOSO): {'+'.join(chosen)} "
            f"(smallest lead {lead}, worst AUROC {worst:.4f})")
    if why is not None:
        merge_why(why, "combiner_loso", whys["+".join(chosen)])
    return chosen, table


def data_why(rows: ClaimRows) -> dict[str, str]:
    """The reasons every AUROC of these records is unmeasured for, whatever the scores: a source of one label, and
    'min' when no source has enough records to decide (a report's ``unmeasured`` starts from them: merge_why)."""
    why: dict[str, str] = {}
    per_source_auroc(np.zeros(len(rows.label)), rows, why=why)
    return why


def fit_support(scorer: CompactJudgeScorer, records: Sequence[PoolRecord], log: Log,
                rows: ClaimRows | None = None, max_features: int | None = None) -> tuple[dict, dict]:
    """The support combiner spec and its report; ``rows``: the records' feature rows when they were computed
    otherwise (cross-fitted: judge_train/crossfit.py), else scored here by ``scorer``; ``max_features``: see
    choose_features. Unfittable when the records are none or of one label only (checked before scoring); every
    value of the report that cannot be measured is None with its reason under the report's ``unmeasured``."""
    problem = fit_problem([r.label for r in records] if rows is None else rows.label, "support record")
    if problem:
        raise Unfittable(f"the support combiner cannot be fit on {problem}")
    rows = claim_rows(scorer, records, log) if rows is None else rows
    names = list(scorer.support_features)
    unmeasured = data_why(rows)
    chosen, table = choose_features(rows, names, log, baseline="lexical_win", max_features=max_features,
                                    why=unmeasured)
    cols = [names.index(n) for n in chosen]
    spec = {"features": chosen, **fit_mil(rows.x[:, cols], rows, np.arange(len(rows.label)),
                                          signs=rows.signs_of(cols))}
    singles = {}
    for i, n in enumerate(names):
        w: dict[str, str] = {}
        singles[n] = per_source_auroc(record_min(rows.x[:, i] * (-1 if n.endswith(("missing", "flip")) else 1),
                                                rows.record, len(rows.label)), rows, why=w)
        merge_why(unmeasured, f"feature_alone.{n}", w)
    unscored: dict[str, str] = {}
    cv_why: dict[str, str] = {}
    cv = per_source_auroc(cross_validated(rows.x[:, cols], rows, signs=rows.signs_of(cols), why=unscored), rows,
                          why=cv_why, unscored=unscored)
    merge_why(unmeasured, "combiner_cv", cv_why)
    report = {"n_records": len(rows.label), "n_claims": int(rows.x.shape[0]), "features_chosen": chosen,
              "combiner_loso": table["+".join(chosen)], "combiner_cv": cv,
              "feature_alone": singles, "subsets_loso": table,
              "standardised_coef": dict(zip(chosen, spec["coef"]))}
    if unmeasured:  # subsets_loso's values are unmeasured for the reasons combiner_loso's are
        report["unmeasured"] = unmeasured
    spec["fit_on"] = (f"{len(rows.label)} held-out records ({rows.x.shape[0]} claims) of "
                      f"{len(set(rows.source))} sources, weighted equally; multiple-instance (min over claims)")
    if "features_chosen" in unmeasured:
        spec["fit_on"] += f"; features {unmeasured['features_chosen']}"
    if max_features is not None:
        spec["fit_on"] += f"; features chosen among subsets of at most {max_features} beside the cross-encoder"
        report["max_features"] = max_features
    return spec, report


# ----------------------------------------------------------------------------------------------------- relevance


RELEVANCE_LABELS = ("not relevant", "relevant")


def fit_relevance(scorer: CompactJudgeScorer, pairs: Sequence[tuple[str, str, int, str, str]], log: Log,
                  sets: Sequence = ()) -> tuple[dict, dict]:
    """(question, passage, label, source, group) held-out pairs -> the relevance combiner spec and report. Passage
    sets (NoMIRACL: does any of the retrieved passages answer the question; set score = its best passage's) count as
    one more source in the worst-source choice, scored by a combiner fit on the other sources' pairs; sets that are
    none or of one label are not scored (the reason under the report's ``unmeasured``, 'nomiracl_sets'). Unfittable
    when the pairs are none or of one label only (checked before scoring: package.py keeps the bare model then)."""
    problem = fit_problem([lab for _, _, lab, _, _ in pairs], "(question, passage) pair", RELEVANCE_LABELS)
    if problem:
        raise Unfittable(f"the relevance combiner cannot be fit on {problem}")
    x = scorer.relevance_features([(q, p) for q, p, *_ in pairs])
    log(f"  relevance features for {len(pairs)} pairs")
    rows = ClaimRows(x, np.arange(len(pairs)), np.array([lab for _, _, lab, _, _ in pairs]),
                     [s for *_, s, _ in pairs], [g for *_, g in pairs], tuple(FEATURE_SIGNS[f] for f in RELEVANCE_FEATURES))
    names = list(RELEVANCE_FEATURES)
    unmeasured = data_why(rows)
    sets_problem = fit_problem([s.label for s in sets], "held-out NoMIRACL passage set", ("without an answer",
                                                                                         "with an answer"))
    if sets_problem:
        unmeasured["nomiracl_sets"] = f"{sets_problem}: the sets are not scored (AUROC needs both labels)"
        sets = ()
    set_x = (scorer.relevance_features([(s.question, p) for s in sets for p in s.passages]) if sets
             else np.zeros((0, len(names))))
    owner = np.asarray([k for k, s in enumerate(sets) for _ in s.passages], dtype=int)
    set_labels = [s.label for s in sets]

    def set_auroc(spec: dict, cols: list[int]) -> float | None:
        if not sets:
            return None
        best = np.full(len(sets), -np.inf)
        np.maximum.at(best, owner, _predict(spec, set_x[:, cols]))
        a = auroc(best, set_labels)
        return None if a is None else round(a, 4)

    def sets_loso(cols: list[int], baseline_only: bool = False) -> dict:
        if baseline_only:  # the baseline feature alone, max over a set's passages
            best = np.full(len(sets), -np.inf)
            np.maximum.at(best, owner, set_x[:, cols[0]])
            a = auroc(best, set_labels)
            return {"nomiracl_sets": None if a is None else round(a, 4)}
        src = np.array(rows.source)
        try:
            spec = fit_mil(x[:, cols], rows, np.flatnonzero(src != "nomiracl"), rounds=1, signs=rows.signs_of(cols))
        except Unfittable as exc:
            unmeasured["combiner_loso.nomiracl_sets"] = (f"the pairs of the sources other than nomiracl are {exc.message}:"
                                                         " no combiner to score the sets with")
            return {"nomiracl_sets": None}
        return {"nomiracl_sets": set_auroc(spec, cols)}

    # the sets decide the choice only with as many of each label as a source needs (MIN_PER_LABEL): fewer are
    # reported beside the sources, as a source with too few records is
    with_answer = sum(1 for lab in set_labels if lab == 1)
    sets_decide = bool(sets) and min(with_answer, len(sets) - with_answer) >= MIN_PER_LABEL
    if sets and not sets_decide:
        unmeasured["nomiracl_sets_decide"] = (f"reported, not deciding the choice: {with_answer} held-out sets with an "
                                              f"answer and {len(sets) - with_answer} without (fewer than "
                                              f"{MIN_PER_LABEL} of a label)")
    chosen, table = choose_features(rows, names, log, baseline="q_coverage", extra=sets_loso if sets else None,
                                    extra_ok={"nomiracl_sets"} if sets_decide else (), why=unmeasured)
    cols = [names.index(n) for n in chosen]
    spec = {"features": chosen, **fit_mil(x[:, cols], rows, np.arange(len(pairs)), rounds=1, signs=rows.signs_of(cols))}
    alone = {}
    for i, n in enumerate(names):
        w: dict[str, str] = {}
        alone[n] = per_source_auroc(x[:, i], rows, why=w)
        merge_why(unmeasured, f"feature_alone.{n}", w)
    unscored: dict[str, str] = {}
    cv_why: dict[str, str] = {}
    cv = per_source_auroc(cross_validated(x[:, cols], rows, rounds=1, signs=rows.signs_of(cols), why=unscored), rows,
                          why=cv_why, unscored=unscored)
    merge_why(unmeasured, "combiner_cv", cv_why)
    report = {"n": len(pairs), "features_chosen": chosen, "combiner_loso": table["+".join(chosen)],
              "combiner_cv": cv, "feature_alone": alone,
              "subsets_loso": table, "standardised_coef": dict(zip(chosen, spec["coef"]))}
    if sets:
        report["nomiracl_sets_auroc"] = set_auroc(spec, cols)
        report["nomiracl_sets_n"] = len(sets)
        for i, n in enumerate(names):  # each feature alone on the sets (max over passages)
            best = np.full(len(sets), -np.inf)
            np.maximum.at(best, owner, set_x[:, i])
            a = auroc(best, set_labels)
            report["feature_alone"][n]["nomiracl_sets"] = None if a is None else round(a, 4)
    if unmeasured:
        report["unmeasured"] = unmeasured
    spec["fit_on"] = f"{len(pairs)} held-out (question, passage) pairs of {len(set(rows.source))} sources"
    if "features_chosen" in unmeasured:
        spec["fit_on"] += f"; features {unmeasured['features_chosen']}"
    return spec, report
