"""Build judges by name. Heavy models load lazily; a judge that cannot be built here becomes an
``UnavailableJudge`` whose every result is 'unmeasured' with the reason, so the run (and the gate) see it."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from corpora.errors import UsageError
from eval.judges.base import JudgeUnavailable
from eval.metrics import LLM_METRICS, ScorerJudge
from eval.records import EvalSample, MetricResult
from eval.rules import RETRIEVAL_KINDS, is_retrieval_metric

JUDGES = ("nli", "embedding", "lexical", "llm", "ragas", "labels")
DEFAULT_METRICS = (*LLM_METRICS, "recall@5", "mrr@10", "ndcg@10")
METRIC_NAMES = f"{', '.join(LLM_METRICS)}, or {'/'.join(RETRIEVAL_KINDS)}@K (K a positive integer)"


def _names(text: str, what: str) -> list[str]:
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise UsageError(f"--{what}: no names given")
    return names


def parse_metrics(text: str) -> list[str]:
    """A comma-separated --metrics value, every name checked (UsageError naming the valid ones)."""
    names = _names(text, "metrics")
    bad = [n for n in names if n not in LLM_METRICS and not is_retrieval_metric(n)]
    if bad:
        raise UsageError(f"--metrics: unknown metric{'s' * (len(bad) > 1)} {', '.join(map(repr, bad))} "
                         f"(valid: {METRIC_NAMES})")
    return names


def parse_judges(text: str) -> list[str]:
    """A comma-separated --judges value, every name checked (UsageError naming the valid ones)."""
    names = _names(text, "judges")
    bad = [n for n in names if n not in JUDGES]
    if bad:
        raise UsageError(f"--judges: unknown judge{'s' * (len(bad) > 1)} {', '.join(map(repr, bad))} "
                         f"(valid: {', '.join(JUDGES)})")
    return names


def judges_for(metric: str) -> tuple[str, ...]:
    return ("labels",) if is_retrieval_metric(metric) else tuple(j for j in JUDGES if j != "labels")


def covered(metrics: list[str] | tuple[str, ...], judges: list[str]) -> list[str]:
    """The metrics one of the judges measures (default metrics a judge selection cannot measure are left out)."""
    return [m for m in metrics if set(judges_for(m)) & set(judges)]


def check_coverage(metrics: list[str], judges: list[str]) -> None:
    """Every metric must be measurable by one of the judges, else nothing would measure it: UsageError."""
    for m in metrics:
        if not set(judges_for(m)) & set(judges):
            raise UsageError(f"no judge among {', '.join(judges)} measures '{m}' (it needs one of: "
                             f"{', '.join(judges_for(m))})")


@dataclass
class UnavailableJudge:
    name: str
    reason: str
    family: str = "unavailable"

    @property
    def config_id(self) -> str:
        return f"{self.name}:unavailable"

    def supports(self, metric: str) -> bool:
        return metric in LLM_METRICS

    def judge(self, metric: str, samples: list[EvalSample]) -> list[MetricResult]:
        return [MetricResult.unmeasured(metric, self.name, f"judge unavailable: {self.reason}") for _ in samples]


@dataclass
class JudgeOptions:
    nli_model: str | None = None  # CrossEncoder folder; None = the project's shipped default, when present
    embedder: object | None = None  # shared embedder (defaults to the bundled MiniLM)
    llm_factory: Callable[[], object] | None = None  # returns a ChatLLM for the llm/ragas judges
    thresholds: dict[str, float] = field(default_factory=dict)
    nli_threshold: float | None = None  # P(supported) at which the nli judge calls a claim supported (default 0.5)


def default_nli_path() -> str | None:
    try:
        from eval.judges.weights import default_model_dir
    except ImportError:
        return None
    path = default_model_dir()
    return str(path) if path else None


def default_judges(nli_model: str | None = None) -> str:
    """The fast default judges, most trusted first (the gate reads the first that measured a metric): the NLI judge
    when its weights are shipped or given, then lexical, embedding and the labels."""
    return ("nli," if nli_model or default_nli_path() else "") + "lexical,embedding,labels"


def _with_config_id(judge, config_id: str):
    judge.config_id = config_id
    return judge


def make_judge(name: str, opts: JudgeOptions):
    if name == "lexical":
        from eval.judges.lexical import LexicalScorer

        return _with_config_id(ScorerJudge(LexicalScorer()), "lexical:v1")
    if name == "labels":
        from eval.judges.labels import LabelsJudge

        return _with_config_id(LabelsJudge(), "labels:pytrec_eval")
    if name == "embedding":
        from eval.judges.embedding import EmbeddingScorer
        from rag.embeddings import make_embedder

        from eval.judges.scripts import reader_for
        from rag.models import MINILM_ID

        embedder = opts.embedder or make_embedder("minilm")
        reads = reader_for(getattr(embedder, "model_dir", None), embedder.model_id,
                           latin_only=embedder.model_id == MINILM_ID)
        return _with_config_id(ScorerJudge(EmbeddingScorer(embedder), unreadable=reads),
                               f"embedding:{embedder.model_id}")
    if name == "nli":
        from eval.judges.nli import load_scorer

        path = opts.nli_model or default_nli_path()
        if path is None:
            raise JudgeUnavailable("no NLI model: pass --nli-model PATH (any sentence-transformers CrossEncoder folder)")
        # the shipped judge carries a calibrated combiner (combiner.json); any other CrossEncoder folder is used bare
        kw = {} if opts.nli_threshold is None else {"support_threshold": opts.nli_threshold}
        scorer = load_scorer(path, embedder=opts.embedder, **kw)
        tag = "" if opts.nli_threshold is None else f"@t={opts.nli_threshold:g}"
        from eval.judges.scripts import reader_for

        reads = reader_for(path, str(path), latin_only=path == default_nli_path())  # the shipped judge: MiniLM
        return _with_config_id(ScorerJudge(scorer, unreadable=reads), f"nli:{path}{tag}")
    if name in ("llm", "ragas"):
        if opts.llm_factory is None:
            raise JudgeUnavailable(f"the {name} judge needs an LLM (bundled model or --judge-base-url)")
        llm = opts.llm_factory()
        if name == "llm":
            from eval.judges.llm_claims import LLMJudge

            return _with_config_id(LLMJudge(llm), f"llm:{llm.model_id}")
        from eval.judges.ragas_judge import RagasJudge

        embedder = opts.embedder or __import__("rag.embeddings", fromlist=["make_embedder"]).make_embedder("minilm")
        return _with_config_id(RagasJudge(llm, embedder), f"ragas:{llm.model_id}")
    raise ValueError(f"unknown judge '{name}' (choose from {', '.join(JUDGES)})")


def make_judges(names: list[str], opts: JudgeOptions) -> list:
    judges = []
    for name in names:
        try:
            judges.append(make_judge(name, opts))
        except JudgeUnavailable as exc:
            judges.append(UnavailableJudge(name, str(exc)))
    return judges
