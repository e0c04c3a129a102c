"""The project's `nli` judge: fine-tuned MiniLM cross-encoders plus a small calibrated combiner per signal.

A judge folder (eval/judges/weights/<name>/, or one written by ``ragdoctor judge train``) holds:
  support/      a 1-logit CrossEncoder, (premise, claim) -> supported (general NLI first, then the claim-level pool)
  relevance/    a 1-logit CrossEncoder, (passage, question) -> the passage bears on the question (optional)
  nli/          a 1-logit CrossEncoder trained on general NLI only (optional): a second opinion on support
  combiner.json logistic regressions over named features (below), fit on held-out slices of the training pool
  idf.json      word -> inverse document frequency over the training pool's evidence texts
A folder with a CrossEncoder at its top level and no combiner.json is any sentence-transformers CrossEncoder and is
used bare (load_scorer).

support(claim | windows, evidence) = sigmoid(w . features), the features of one claim against its evidence:
    ce_max          the support cross-encoder's best P(supported) over the claim's premise windows (a probability,
                    bounded: every combiner so far was fit on it; MODEL_CARD.md, session 34)
    lexical_win     best unigram precision over the windows (what the lexical baseline scores)
    lexical_doc, idf_doc, bigram_doc, number_missing, entity_missing   the claim against the whole evidence
                    (features.py)
    negation_flip   the claim and its best window disagree in polarity
    nli_max         (only with nli/) the general-NLI cross-encoder's best P(supported) over the same windows: a model that
                    never saw the claim-level pool, computed only when the combiner uses it
relevance(question, passage) = sigmoid(v . features) over the passage's best windows (a cheap ranker keeps the few
    sharing most words with the question, so a 2,000-word document costs a handful of model calls):
    rel_max         the relevance cross-encoder's best P(relevant) over those windows
    q_coverage      share of the question's content words found in the passage
On CPU the cross-encoders run in one of three precisions (``precision``, or the RAGDOCTOR_JUDGE_PRECISION
environment variable; ``auto`` by default):
    bf16   matmuls in bfloat16 with fp32 accumulation (torch CPU autocast): chosen by ``auto`` on CPUs with native
           bf16 (AMX or AVX512-BF16), where it is ~2x fp32 and within ~0.01 logit of it
    int8   the feed-forward layers quantised to int8 at load time (dynamic, per channel): ``auto`` elsewhere (AVX2),
           ~1.2-1.5x fp32, within ~0.5 logit, and a pair's score moves slightly with its batch
    fp32   as trained
On a GPU they run as loaded.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from corpora.errors import UsageError
from corpora.jsonl import read_json_object
from corpora.paths import UNFINISHED
from eval.judges import features as F
from eval.judges.base import ClaimItem, ClaimScore, Support
from eval.judges.lexical import unigram_precision
from eval.judges.cross_encoder import CrossEncoderScorer
from eval.tokens import content_tokens
from rag.precision import native_bf16, quantize_ffn, resolve_precision

SUPPORT_FEATURES = ("ce_max", "lexical_win", "lexical_doc", "idf_doc", "bigram_doc", "number_missing",
                    "entity_missing", "negation_flip")
RELEVANCE_FEATURES = ("rel_max", "q_coverage")
# the direction each feature's meaning gives it (+1: more of it, more likely supported / relevant): combiners keep
# these signs (judge_train/combine.py), so every weight reads plainly and none flips on unfamiliar text
FEATURE_SIGNS = {"ce_max": 1, "lexical_win": 1, "lexical_doc": 1, "idf_doc": 1, "bigram_doc": 1, "number_missing": -1,
                 "entity_missing": -1, "negation_flip": -1, "nli_max": 1, "rel_max": 1, "q_coverage": 1}


# tokens of a (window, claim) pair the cross-encoders read: the length they were trained at. Premise windows are
# bounded by words (eval/claims.py) to fit it; text heavy with names and numbers can still run past it, and
# meta-eval's 'cut' column reports how often (reading 256 instead was measured and not kept: MODEL_CARD.md).
READ_TOKENS = 160


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return np.log(p / (1 - p))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def relevance_windows(passage: str, question: str, words: int = 100, stride: int = 50, keep: int = 4) -> list[str]:
    """Overlapping ``words``-word windows of the passage, the ``keep`` sharing most content words with the question
    (in passage order). A short passage is one window."""
    toks = passage.split()
    if len(toks) <= words:
        return [passage] if passage.strip() else []
    wins = [" ".join(toks[i : i + words]) for i in range(0, max(1, len(toks) - words + stride), stride)]
    q = set(content_tokens(question))
    ranked = sorted(range(len(wins)), key=lambda i: (-len(q & set(content_tokens(wins[i]))), i))[:keep]
    return [wins[i] for i in sorted(ranked)]


PRECISION_ENV = "RAGDOCTOR_JUDGE_PRECISION"


def cpu_precision(precision: str | None = None) -> str:
    """The precision the CPU cross-encoders run in: ``precision``, else $RAGDOCTOR_JUDGE_PRECISION, else auto (bf16
    where the CPU has native bf16, int8 elsewhere). An unknown name is a usage error (one line)."""
    return resolve_precision(precision, PRECISION_ENV, lambda: native_bf16())  # late-bound: tests replace it


class Combiner:
    """A logistic regression over named, standardised features: p = sigmoid(sum(coef * (x - mean) / scale) + b)."""

    def __init__(self, spec: dict):
        self.features: list[str] = list(spec["features"])
        self.coef = np.asarray(spec["coef"], dtype=np.float64)
        self.intercept = float(spec["intercept"])
        self.mean = np.asarray(spec.get("mean", [0.0] * len(self.features)), dtype=np.float64)
        self.scale = np.asarray(spec.get("scale", [1.0] * len(self.features)), dtype=np.float64)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if x.shape[0] == 0:
            return np.zeros(0)
        return _sigmoid(((x - self.mean) / self.scale) @ self.coef + self.intercept)


class CompactJudgeScorer:
    """A Scorer (eval/judges/base.py) with a claim-level path: name "nli", family "nli"."""

    family = "nli"

    def __init__(self, model_dir: str | Path, *, combiner: dict | None | str = "auto", precision: str | None = None,
                 name: str = "nli", batch_size: int = 32, max_length: int = READ_TOKENS, device: str | None = None,
                 support_threshold: float = 0.5, relevance_threshold: float = 0.5, embedder=None,  # noqa: ARG002
                 support: str | Path | None = None):
        """``support``: a support cross-encoder to use instead of the folder's ``support/`` (e.g. a model trained
        without some sources, to score them as unseen: judge_train/crossfit.py)."""
        self.model_dir = Path(model_dir)
        self.name = name
        self.support_threshold = support_threshold
        self.relevance_threshold = relevance_threshold
        self.precision = cpu_precision(precision)
        support_dir = Path(support) if support is not None else self.model_dir / "support"
        self.ce = CrossEncoderScorer(support_dir if support_dir.is_dir() else self.model_dir, name=name,
                                     batch_size=batch_size, max_length=max_length, device=device)
        rel_dir = self.model_dir / "relevance"
        self.rel_ce = (CrossEncoderScorer(rel_dir, name=name, batch_size=batch_size, max_length=max_length,
                                          device=device) if rel_dir.is_dir() else None)
        nli_dir = self.model_dir / "nli"
        self.nli_ce = (CrossEncoderScorer(nli_dir, name=name, batch_size=batch_size, max_length=max_length,
                                          device=device) if nli_dir.is_dir() else None)
        # the feature columns of this folder: SUPPORT_FEATURES, and nli_max when it holds a general-NLI model
        self.support_features: tuple[str, ...] = SUPPORT_FEATURES + (("nli_max",) if self.nli_ce else ())
        if combiner == "auto":
            path = self.model_dir / "combiner.json"
            combiner = read_json_object(path) if path.exists() else None
        self.spec: dict = combiner or {}  # type: ignore[assignment]
        self.support_combiner = Combiner(self.spec["support"]) if self.spec.get("support") else None
        self.relevance_combiner = Combiner(self.spec["relevance"]) if self.spec.get("relevance") else None
        for what, comb, known in (("support", self.support_combiner, self.support_features),
                                  ("relevance", self.relevance_combiner, RELEVANCE_FEATURES)):
            unknown = [f for f in (comb.features if comb else []) if f not in known]
            if unknown:  # e.g. nli_max in a folder without nli/: say so now, not as a crash mid-evaluation
                raise UsageError(f"{self.model_dir / 'combiner.json'}: field '{what}.features': '{unknown[0]}' is not "
                                 f"a feature this folder computes (it computes {', '.join(known)})")
        idf_path = self.model_dir / "idf.json"
        self.idf: dict[str, float] = read_json_object(idf_path) if idf_path.exists() else {}
        self.idf_unseen = max(self.idf.values()) if self.idf else 1.0
        self._ready: set[int] = set()

    def load(self) -> CompactJudgeScorer:
        """Load every cross-encoder of the folder now (they load on first use otherwise)."""
        for ce in (self.ce, self.rel_ce, self.nli_ce):
            if ce is not None:
                ce.load()
        return self

    @property
    def max_length(self) -> int:
        """Tokens of a (premise, claim) pair the cross-encoders read."""
        return self.ce.max_length

    # ------------------------------------------------------------------------------------------ model signals
    def _probs(self, ce: CrossEncoderScorer, pairs: list[tuple[str, str]]) -> np.ndarray:
        """P(supported) of (premise, hypothesis) pairs by ``ce``, in this scorer's precision."""
        if not pairs:
            return np.zeros(0)
        if id(ce) not in self._ready:
            self._ready.add(id(ce))
            on_cpu = next(ce.model.parameters()).device.type == "cpu"
            if on_cpu and self.precision == "int8":
                quantize_ffn(ce.model)
            ce.autocast_bf16 = on_cpu and self.precision == "bf16"
        return np.array([s.supported for s in ce.support(pairs)], dtype=np.float64)

    def support_logits(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """The support cross-encoder's logit for (premise, claim) pairs."""
        return _logit(self._probs(self.ce, pairs))

    def relevance_logits(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """The relevance cross-encoder's logit for (passage window, question) pairs (the support model's when the
        folder has no relevance model)."""
        return _logit(self._probs(self.rel_ce or self.ce, pairs))

    def count_truncated(self, pairs: list[tuple[str, str]]) -> int:
        """How many (premise, hypothesis) pairs exceed the support model's maximum length (their end is unseen)."""
        return self.ce.count_truncated(pairs)

    def cut_flags(self, pairs: list[tuple[str, str]]) -> list[bool]:
        """Each (premise, hypothesis) pair: longer than the support model reads."""
        return self.ce.cut_flags(pairs)

    # ------------------------------------------------------------------------------------------ claim level
    def _reads(self, feature: str) -> bool:
        """A support feature is computed only where it is read: every one while combiners are being fit (no combiner
        yet), else those the support combiner uses (the shipped one reads two of eight; the rest are NaN, never a
        stand-in value)."""
        return self.support_combiner is None or feature in self.support_combiner.features

    def _needs_nli(self) -> bool:
        """The general-NLI model runs only where its feature is read (see _reads)."""
        return self.nli_ce is not None and self._reads("nli_max")

    def claim_features(self, items: Sequence[ClaimItem]) -> tuple[np.ndarray, list[int | None]]:
        """(n, len(self.support_features)) feature rows and each claim's best window (by the support model).
        A feature the combiner does not read is not computed (see _reads): NaN."""
        flat = [(w, it.claim) for it in items for w in it.windows]
        probs = self._probs(self.ce, flat)
        nli_ce = self.nli_ce if self._needs_nli() else None
        nli_probs = self._probs(nli_ce, flat) if nli_ce is not None else None
        rows, best, k = [], [], 0
        for it in items:
            n = len(it.windows)
            ce = probs[k : k + n]
            nli = nli_probs[k : k + n] if nli_probs is not None else None
            k += n
            b = int(np.argmax(ce)) if n else None
            premise = it.windows[b] if b is not None else ""
            cheap: dict[str, Callable[[], float]] = {
                "lexical_win": lambda: max((unigram_precision(w, it.claim) for w in it.windows), default=0.0),
                "lexical_doc": lambda: F.lexical_doc(it.claim, it.evidence),
                "idf_doc": lambda: F.idf_doc(it.claim, it.evidence, self.idf, self.idf_unseen),
                "bigram_doc": lambda: F.bigram_doc(it.claim, it.evidence),
                "number_missing": lambda: F.number_missing(it.claim, it.evidence),
                "entity_missing": lambda: F.entity_missing(it.claim, it.evidence),
                "negation_flip": lambda: F.negation_flip(it.claim, premise) if premise else 0.0,
            }
            rows.append([float(ce[b]) if b is not None else 0.0,  # no window to read: P(supported) 0
                         *(cheap[name]() if self._reads(name) else float("nan") for name in SUPPORT_FEATURES[1:])])
            if self.nli_ce is not None:
                rows[-1].append(float("nan") if nli is None else float(nli.max()) if n else 0.0)
            best.append(b)
        return np.asarray(rows, dtype=np.float64).reshape(len(items), len(self.support_features)), best

    def claim_support(self, items: Sequence[ClaimItem]) -> list[ClaimScore]:
        if not items:
            return []
        x, best = self.claim_features(items)
        p = self._combine(self.support_combiner, x, self.support_features, "ce_max")
        return [ClaimScore(float(v), b, dict(zip(self.support_features, map(float, row))))
                for v, b, row in zip(p, best, x)]

    def _combine(self, combiner: Combiner | None, x: np.ndarray, names: Sequence[str], bare: str) -> np.ndarray:
        if combiner is None:  # no combiner.json: the bare cross-encoder's probability
            return x[:, names.index(bare)].copy()
        return combiner(x[:, [names.index(f) for f in combiner.features]])

    # ------------------------------------------------------------------------------------------ the Scorer
    def support(self, pairs: list[tuple[str, str]]) -> list[Support]:
        """(premise, hypothesis) pairs, each premise its own whole evidence."""
        return [Support(s.support) for s in self.claim_support([ClaimItem(h, [p], p) for p, h in pairs])]

    @staticmethod
    def relevance_reads(pairs: Sequence[tuple[str, str]]) -> tuple[list[tuple[str, str]], list[int]]:
        """The (window, question) pairs the relevance model reads for (question, passage) ``pairs``, and the pair each
        came from."""
        flat: list[tuple[str, str]] = []
        owner: list[int] = []
        for i, (question, passage) in enumerate(pairs):
            for w in relevance_windows(passage, question) or [""]:
                flat.append((w, question))
                owner.append(i)
        return flat, owner

    def relevance_features(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        flat, owner = self.relevance_reads(pairs)
        probs = self._probs(self.rel_ce or self.ce, flat)
        rel = np.full(len(pairs), -np.inf)
        for v, i in zip(probs, owner):
            rel[i] = max(rel[i], v)
        cov = [unigram_precision(passage, question) for question, passage in pairs]
        return np.stack([rel, np.asarray(cov, dtype=np.float64)], axis=1) if pairs else np.zeros((0, 2))

    def relevance(self, pairs: list[tuple[str, str]]) -> list[float]:
        """(question, passage) -> P(the passage bears on the question)."""
        if not pairs:
            return []
        x = self.relevance_features(pairs)
        return [float(v) for v in self._combine(self.relevance_combiner, x, RELEVANCE_FEATURES, "rel_max")]


def is_judge_folder(model_dir: str | Path) -> bool:
    p = Path(model_dir)
    return (p / "combiner.json").exists() or (p / "support").is_dir()


def folder_problem(model_dir: str | Path) -> str | None:
    """Why ``model_dir`` cannot be an nli model, read from its files without loading anything; None when it can be
    one: a judge folder (support/ or combiner.json) or a CrossEncoder folder (config.json)."""
    p = Path(model_dir)
    if not p.is_dir():
        return "not a folder" if p.exists() else "folder not found"
    if not is_judge_folder(p) and not (p / "config.json").is_file():
        return "not a judge folder (support/, combiner.json) or a CrossEncoder folder (config.json)"
    if (p / UNFINISHED).exists():
        return "a ragdoctor judge command stopped before it finished writing it (it holds .unfinished): rerun that command"
    return None


def load_scorer(model_dir: str | Path, **kwargs):
    """The right Scorer for a folder: CompactJudgeScorer for a judge folder (support/ or combiner.json), else the
    bare CrossEncoderScorer (any sentence-transformers CrossEncoder folder)."""
    if is_judge_folder(model_dir):
        return CompactJudgeScorer(model_dir, **kwargs)
    allowed = {k: v for k, v in kwargs.items() if k in ("name", "batch_size", "max_length", "device",
                                                         "support_threshold", "relevance_threshold")}
    return CrossEncoderScorer(model_dir, **allowed)
