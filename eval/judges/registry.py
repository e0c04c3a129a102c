"""Judges by name: ``JUDGES`` maps each name to how it is built and which metrics it measures (adding a judge is one
entry here). Heavy models load lazily; a judge that cannot be built here becomes an ``UnavailableJudge`` whose every
result is 'unmeasured' with the reason, so the run (and the gate) see it."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpora.digest import folder_digest
from corpora.errors import InputError, UsageError
from corpora.records import MetricResult, Trace
from eval.judges.base import Judge, JudgeUnavailable
from eval.judges.embedding import EmbeddingScorer
from eval.judges.labels import LabelsJudge
from eval.judges.lexical_judge import LexicalJudge
from eval.judges.llm_claims import MAX_CHARS, LLMJudge
from eval.judges.scorer import ScorerJudge
from eval.judges.scripts import reader_for
from eval.judges.weights import default_model_dir
from eval.metrics import DEFAULT_METRICS, METRIC_NAMES, find, get
from eval.metrics.base import Metric
from rag.embeddings import make_embedder
from rag.models import MINILM_ID

__all__ = ["DEFAULT_METRICS", "JUDGES", "JUDGE_PREFERENCE", "JudgeOptions", "UnavailableJudge", "check_coverage",
           "check_nli_model", "covered", "default_judges", "make_judge", "make_judges", "parse_judges", "parse_metrics",
           "trust_rank"]


@dataclass
class JudgeOptions:
    nli_model: str | None = None  # CrossEncoder folder; None = the project's shipped default, when present
    embedder: object | None = None  # shared embedder (defaults to the bundled MiniLM)
    llm_factory: Callable[[], object] | None = None  # returns a ChatLLM for the llm/ragas judges
    nli_threshold: float | None = None  # P(supported) at which the nli judge calls a claim supported (default 0.5)
    llm_concurrency: int = 1  # requests the llm/ragas judges keep in flight at once
    llm_max_chars: int | None = None  # characters of text one llm-judge ask quotes (None: its default, MAX_CHARS)


def default_nli_path() -> str | None:
    path = default_model_dir()
    return str(path) if path else None


def _lexical(opts: JudgeOptions) -> Judge:
    return LexicalJudge()


def _labels(opts: JudgeOptions) -> Judge:
    return LabelsJudge()


def _embedding(opts: JudgeOptions) -> Judge:
    embedder: Any = opts.embedder or make_embedder("minilm")
    reads = reader_for(getattr(embedder, "model_dir", None), embedder.model_id,
                       latin_only=embedder.model_id == MINILM_ID)
    return ScorerJudge(EmbeddingScorer(embedder), unreadable=reads, config_id=f"embedding:{embedder.model_id}")


JUDGE_DOCS = ("MODEL_CARD.md", "README.md", "heldout_metrics.json", "package.json", "stages/")  # change no verdict


def _nli(opts: JudgeOptions) -> Judge:
    from eval.judges.nli import load_scorer  # noqa: PLC0415 - lazy: sentence-transformers and torch

    path = opts.nli_model or default_nli_path()
    if path is None:
        raise JudgeUnavailable("no NLI model: pass --nli-model PATH (any sentence-transformers CrossEncoder folder)")
    # the shipped judge carries a calibrated combiner (combiner.json); any other CrossEncoder folder is used bare
    kw = {} if opts.nli_threshold is None else {"support_threshold": opts.nli_threshold}
    scorer = load_scorer(path, embedder=opts.embedder, **kw)
    tag = "" if opts.nli_threshold is None else f"@t={opts.nli_threshold:g}"
    reads = reader_for(path, str(path), latin_only=path == default_nli_path())  # the shipped judge: MiniLM
    # named by its folder's name and content, not its path: a retrained or re-combined folder at the same path is a
    # new judge (never resumed from the old one's verdicts), and a checkout moved elsewhere is the same judge
    # the CPU precision is part of the name: bf16 and int8 scores differ slightly, so a run resumed on a machine
    # that picks the other one re-judges instead of mixing the two
    precision = getattr(scorer, "precision", None)
    name = (f"{Path(path).name}@{folder_digest(path, skip=JUDGE_DOCS)}@len={scorer.max_length}"
            + (f"@{precision}" if precision else ""))
    return ScorerJudge(scorer, unreadable=reads, config_id=f"nli:{name}{tag}")


def _llm_for(name: str, opts: JudgeOptions) -> object:
    if opts.llm_factory is None:
        raise JudgeUnavailable(f"the {name} judge needs an LLM (bundled model or --judge-base-url)")
    return opts.llm_factory()


def _llm(opts: JudgeOptions) -> Judge:
    max_chars = MAX_CHARS if opts.llm_max_chars is None else opts.llm_max_chars  # the ragas judge does not read it
    return LLMJudge(_llm_for("llm", opts), concurrency=opts.llm_concurrency,  # type: ignore[arg-type]
                    max_chars=max_chars)


def _ragas(opts: JudgeOptions) -> Judge:
    from eval.judges.ragas_judge import RagasJudge  # noqa: PLC0415 - lazy: ragas and langchain (seconds)

    llm = _llm_for("ragas", opts)
    return RagasJudge(llm, opts.embedder or make_embedder("minilm"),  # type: ignore[arg-type]
                      concurrency=opts.llm_concurrency)


def _model(m: Metric) -> bool:
    return m.model


@dataclass(frozen=True)
class JudgeSpec:
    """``measures``: which metric declarations the judge computes; ``trust``: its rank when several judges measured a
    metric (the classifier, the gate and the dashboard read the most trusted; None: never preferred)."""

    family: str
    build: Callable[[JudgeOptions], Judge]
    measures: Callable[[Metric], bool]
    trust: int | None = None


# lexical ranks above embedding because it beat it on every human-labelled dev set (meta-eval)
JUDGES: dict[str, JudgeSpec] = {
    "nli": JudgeSpec("nli", _nli, _model, trust=0),
    "embedding": JudgeSpec("embedding", _embedding, _model, trust=4),
    "lexical": JudgeSpec("lexical", _lexical, _model, trust=3),
    "llm": JudgeSpec("llm", _llm, _model, trust=1),
    "ragas": JudgeSpec("llm", _ragas, lambda m: m.ragas is not None, trust=2),
    "labels": JudgeSpec("labels", _labels, lambda m: not m.model),
}
JUDGE_PREFERENCE = tuple(sorted((n for n, s in JUDGES.items() if s.trust is not None),
                                key=lambda n: JUDGES[n].trust))  # type: ignore[arg-type, return-value]


def trust_rank(judge: str) -> int:
    """Where ``judge`` stands in JUDGE_PREFERENCE (0: most trusted); a judge it does not rank comes after all."""
    return JUDGE_PREFERENCE.index(judge) if judge in JUDGE_PREFERENCE else len(JUDGE_PREFERENCE)


def _names(text: str, what: str) -> list[str]:
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise UsageError(f"--{what}: no names given")
    return names


def _unknown(what: str, bad: list[str], valid: str) -> UsageError:
    return UsageError(f"--{what}: unknown {what[:-1]}{'s' * (len(bad) > 1)} {', '.join(map(repr, bad))} "
                      f"(valid: {valid})")


def parse_metrics(text: str) -> list[str]:
    """A comma-separated --metrics value, every name checked (UsageError naming the valid ones)."""
    names = _names(text, "metrics")
    bad = [n for n in names if find(n) is None]
    if bad:
        raise _unknown("metrics", bad, METRIC_NAMES)
    return names


def parse_judges(text: str) -> list[str]:
    """A comma-separated --judges value, every name checked (UsageError naming the valid ones)."""
    names = _names(text, "judges")
    bad = [n for n in names if n not in JUDGES]
    if bad:
        raise _unknown("judges", bad, ", ".join(JUDGES))
    return names


def judges_for(metric: str) -> tuple[str, ...]:
    m = get(metric)
    return tuple(name for name, spec in JUDGES.items() if spec.measures(m))


def covered(metrics: list[str] | tuple[str, ...], judges: list[str]) -> list[str]:
    """The metrics one of the judges measures (default metrics a judge selection cannot measure are left out)."""
    return [m for m in metrics if set(judges_for(m)) & set(judges)]


def check_coverage(metrics: list[str], judges: list[str]) -> None:
    """Every metric must be measurable by one of the judges, else nothing would measure it: UsageError."""
    for m in metrics:
        if not set(judges_for(m)) & set(judges):
            raise UsageError(f"no judge among {', '.join(judges)} measures '{m}' (it needs one of: "
                             f"{', '.join(judges_for(m))})")


def check_nli_model(path: str | Path | None, flag: str = "--nli-model", *, load: bool = False) -> None:
    """A model folder the user named must be one, refused before any work (UsageError naming ``flag``): its files at
    once, and with ``load`` its models loaded (seconds; a config.json that is no model's fails only then). None (the
    shipped judge) passes."""
    from eval.judges.nli import folder_problem, load_scorer  # noqa: PLC0415 - lazy: see _nli

    why = None if path is None else folder_problem(path)
    if why:
        raise UsageError(f"{flag} {path}: {why}")
    if path is not None and load:
        try:
            load_scorer(path).load()
        except InputError:  # a damaged combiner.json or idf.json: the one line names the file
            raise
        except Exception as exc:  # noqa: BLE001 - whatever transformers raises for a folder that is no model
            raise UsageError(f"{flag} {path}: cannot be loaded ({type(exc).__name__}: "
                             f"{' '.join(str(exc).split())})") from None


def default_judges(nli_model: str | None = None) -> str:
    """The fast default judges, most trusted first (the gate reads the most trusted that measured a metric): the NLI
    judge when its weights are shipped or given, then lexical, embedding and the labels."""
    return ("nli," if nli_model or default_nli_path() else "") + "lexical,embedding,labels"


@dataclass
class UnavailableJudge:
    name: str
    reason: str
    family: str = "unavailable"

    @property
    def config_id(self) -> str:
        return f"{self.name}:unavailable"

    def supports(self, metric: str) -> bool:
        m = find(metric)
        return m is not None and JUDGES[self.name].measures(m) if self.name in JUDGES else False

    def judge(self, metric: str, traces: list[Trace]) -> list[MetricResult]:
        return [MetricResult.unmeasured(metric, self.name, f"judge unavailable: {self.reason}") for _ in traces]


def make_judge(name: str, opts: JudgeOptions) -> Judge:
    if name not in JUDGES:
        raise ValueError(f"unknown judge '{name}' (choose from {', '.join(JUDGES)})")
    return JUDGES[name].build(opts)


def make_judges(names: list[str], opts: JudgeOptions) -> list[Judge]:
    judges: list[Judge] = []
    for name in names:
        try:
            judges.append(make_judge(name, opts))
        except JudgeUnavailable as exc:
            judges.append(UnavailableJudge(name, str(exc)))
    return judges
