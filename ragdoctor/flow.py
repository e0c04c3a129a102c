"""The flow as a library: corpora -> rag -> eval -> diagnostics, one function per step, each writing into a run
folder (corpora/run_folder.py). The CLI (ragdoctor/cmd_*.py), the dashboard's playground, bench/ and the Python API
(ragdoctor/api.py) all call these; none of them wires pipeline -> judge -> classify itself.

    index(cfg)                         build (or check) the index
    answer_questions(cfg, traces)      a question set through the pipeline into a traces log (resumable)
    evaluate_file(path, run_dir, ...)  any supported JSONL into a run folder's judgements (resumable)
    evaluate_traces(traces, run, ...)  the same for traces in memory
    judge(traces, judges, metrics)     traces judged in memory, nothing written (judge_one: and diagnosed)
    diagnose_run(run_dir)              every judged sample into the failure taxonomy (diagnose_judgements: in memory)
    probe(run_dir, ...)                counterfactual regenerations of the failed samples
    gate_run(run, cfg)                 the CI gate over a run's summary"""
from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from corpora.errors import InputError, UsageError, report_skipped, warn
from corpora.records import Diagnosis, Judgement, Question, Trace
from corpora.run_folder import DIAGNOSES, REQUESTS, RUN_SUMMARY, TRACES, RunFolder
from diagnostics.classify import classify
from diagnostics.probes import probe_run
from diagnostics.report import diagnose
from eval.adapters import load_traces
from eval.gate import Check, GateConfig, check, junit_path, load_summary, write_junit
from eval.guard_adapter import make_fact_check
from eval.judge_cache import CachedLLM
from eval.judges.base import Judge
from eval.judges.registry import (
    DEFAULT_METRICS,
    JudgeOptions,
    UnavailableJudge,
    check_coverage,
    check_nli_model,
    covered,
    default_judges,
    make_judge,
    make_judges,
    parse_judges,
    parse_metrics,
)
from eval.judging import Engine, EvalRun, evaluate, judge_batch
from rag.config import GenerationConfig, PipelineConfig
from rag.run_questions import RunResult, run_questions
from ragdoctor.labelled_queries import warn_unknown_labels
from ragdoctor.run_report import is_run_summary, summarize_traces

if TYPE_CHECKING:
    from rag.store import IndexStore

# rag.session (the index, the pipeline, the generator) is imported where it is used: it loads llama-index, a second
# of start-up that gate, diagnose, summary and eval on a file never need


@dataclass(frozen=True)
class Selection:
    """Which judges measure which metrics: the defaults (the fast judges, the metrics they cover) unless named."""

    judges: list[str]
    metrics: list[str]

    @classmethod
    def of(cls, judges: str | Sequence[str] | None = None, metrics: str | Sequence[str] | None = None,
           nli_model: str | None = None) -> Selection:
        names = parse_judges(as_text(judges, "judges") if judges is not None else default_judges(nli_model))
        if "nli" in names:  # a mistyped folder is refused now, not run as an unavailable judge (given without the
            check_nli_model(nli_model)  # nli judge, the caller's unused-option check says so instead)
        chosen = parse_metrics(as_text(metrics, "metrics")) if metrics is not None else covered(DEFAULT_METRICS, names)
        check_coverage(chosen, names)
        return cls(names, chosen)


def as_text(names: str | Sequence[str], what: str = "names") -> str:
    """Names given as one comma-separated string or a list of strings, as one string; anything else is a
    UsageError naming ``what``."""
    if isinstance(names, str):
        return names
    if not isinstance(names, (list, tuple, set, frozenset)) or not all(isinstance(n, str) for n in names):
        raise UsageError(f"{what}: expected names as a comma-separated string or a list of strings, got {names!r}")
    return ",".join(names)


# the options a judge reads, by keyword (the API's and the CLI's destination names), and the judges that read them
JUDGE_OPTION_READERS = {"nli_model": ("nli",), "nli_threshold": ("nli",), "judge_base_url": ("llm", "ragas"),
                        "judge_model": ("llm", "ragas"), "judge_concurrency": ("llm", "ragas"),
                        "judge_max_chars": ("llm",)}


def unused_judge_options(given: Mapping[str, object], judges: Sequence[str],
                         label: Callable[[str], str] = lambda name: name) -> None:
    """An option given for a judge that does not run would be silently ignored: UsageError naming it (``label``
    spells it, e.g. as its flag) and the judges that read it."""
    for name, value in given.items():
        readers = JUDGE_OPTION_READERS[name]
        if value is not None and not set(readers) & set(judges):
            who = f"the {readers[0]} judge reads" if len(readers) == 1 else f"the {' and '.join(readers)} judges read"
            raise UsageError(f"{label(name)}: only {who} it, and the judges run are {', '.join(judges)}")


def llm_factory(stack: ExitStack, base_url: str | list[str] | None, model: str, *, concurrency: int = 1,
                stats: list | None = None) -> Callable[[], object]:
    """The LLM judges' model, started on first use (the bundled one with ``concurrency`` slots, or a client to
    ``base_url``: one URL or a fleet), cached on disk and stopped when ``stack`` closes; its request counters
    (rag.fleet.RequestStats) are put in ``stats`` when given."""
    cache: dict = {}

    def factory() -> object:
        if "llm" not in cache:
            cfg = PipelineConfig(generation=GenerationConfig(base_url=base_url, model=model, concurrency=concurrency))
            from rag.session import open_generator  # noqa: PLC0415 - lazy: see the imports

            client = stack.enter_context(open_generator(cfg))
            counts = getattr(client, "stats", None)
            if stats is not None and counts is not None:
                stats.append(counts)
            cache["llm"] = CachedLLM(client)  # type: ignore[arg-type]
        return cache["llm"]

    return factory


@contextmanager
def built_judges(selection: Selection, *, nli_model: str | None = None, nli_threshold: float | None = None,
                 judge_base_url: str | list[str] | None = None, judge_model: str = "qwen2.5-0.5b",
                 embedder: object | None = None, judge_concurrency: int = 1,
                 judge_max_chars: int | None = None, request_stats: list | None = None,
                 spell: Callable[[str], str] | None = None) -> Iterator[list[Judge]]:
    """The selected judges, built; an LLM judge's model is stopped on exit. A judge that cannot run here is built as
    unavailable (its metrics unmeasured, with why) and warned about. ``judge_concurrency``: requests the llm/ragas
    judges keep in flight; ``judge_max_chars``: characters of text one llm-judge ask quotes (None: its default,
    eval.judges.llm_claims.MAX_CHARS); ``request_stats`` receives their model's request counters; ``spell`` rewrites
    the reason of an unavailable judge for its caller (the Python API names its arguments where the CLI names its
    flags)."""
    check_nli_model(nli_model, load="nli" in selection.judges)  # a named model that cannot load: refused, not
    with ExitStack() as stack:  # a run with that judge unmeasured
        opts = JudgeOptions(nli_model=nli_model, nli_threshold=nli_threshold, embedder=embedder,
                            llm_concurrency=judge_concurrency, llm_max_chars=judge_max_chars,
                            llm_factory=llm_factory(stack, judge_base_url, judge_model, concurrency=judge_concurrency,
                                                    stats=request_stats))
        judges = make_judges(selection.judges, opts)
        for j in judges:
            if isinstance(j, UnavailableJudge):
                j.reason = spell(j.reason) if spell else j.reason
                warn(f"judge {j.name} unavailable: {j.reason}: its metrics are unmeasured")
        yield judges


# --- the pipeline ------------------------------------------------------------------------------------------------

def index(cfg: PipelineConfig, *, rebuild: bool = False, engine: str = "local",
          ray: RayOptions | None = None) -> tuple[IndexStore, bool]:
    """The index for ``cfg``, built when missing or stale; True when it was built now. ``engine`` "ray" embeds the
    chunks on Ray Data actors and builds the faiss index from their shards (rag/ray_index.py)."""
    builder = None
    if engine == "ray":
        from rag.ray_index import RayDense  # noqa: PLC0415 - lazy: only --engine ray loads Ray

        opts, e = ray or RayOptions(), cfg.embedding
        builder = RayDense(e.model, batch_size=e.batch_size, device=e.device, backend=e.backend, address=opts.address,
                           num_workers=opts.num_workers, gpus_per_worker=opts.gpus_per_worker,
                           init=dict(opts.init or {}))
    else:
        make_engine(engine, lambda: None, ray)  # the same checks: unknown engine, ray options without ray
    from rag.session import embedder_for, open_index  # noqa: PLC0415 - lazy: see the imports

    return open_index(cfg, embedder_for(cfg), rebuild=rebuild, dense_builder=builder)


def fact_check_for(cfg: PipelineConfig, embedder: object | None = None) -> Callable | None:
    """The guardrails' output rail judge (the compact NLI judge when installed, else lexical). Built here, above rag/,
    because rag/ must not import eval/."""
    if not (cfg.guardrails.enabled and cfg.guardrails.output):
        return None
    return make_fact_check("auto", embedder=embedder)


@contextmanager
def pipeline(cfg: PipelineConfig, *, llm: object | None = None) -> Iterator:
    """A ready pipeline (guarded when ``cfg.guardrails.enabled``); the bundled model server stops on exit."""
    from rag.session import open_pipeline  # noqa: PLC0415 - lazy: see the imports

    with open_pipeline(cfg, llm=llm, fact_check=fact_check_for(cfg)) as pipe:
        yield pipe


def answer_questions(cfg: PipelineConfig, traces: str | Path, *, questions: list[Question] | None = None,
                     limit: int | None = None, llm: object | None = None, progress: bool = True) -> RunResult:
    """``questions`` (default: ``cfg``'s question set) through the pipeline into the traces log ``traces`` (a rerun
    resumes); the bad question lines are reported and listed in the run folder's input_errors.txt."""
    run = RunFolder.of_traces(traces)
    run.check_traces_writable()  # refuse a file that is not ours before building anything
    # a run folder's own traces.jsonl is this run's until it is done (another run or evaluation of the folder meanwhile
    # is refused in one line); a traces file of another name (`run --out FILE`) may share its folder with anything
    own = run.traces.path.name == TRACES
    with run.claim("run", check=run.check_traces_writable) if own else nullcontext():
        return _answer_questions(cfg, run, questions=questions, limit=limit, llm=llm, progress=progress)


def _answer_questions(cfg: PipelineConfig, run: RunFolder, *, questions: list[Question] | None, limit: int | None,
                      llm: object | None, progress: bool) -> RunResult:
    had_log = run.traces.path.exists()  # then the folder's input_errors.txt is an earlier run's, else maybe a user's
    errors: list[InputError] = []
    from rag.session import question_set  # noqa: PLC0415 - lazy: see the imports

    questions = (question_set(cfg, errors) if questions is None else questions)[: limit or None]
    for e in errors:
        report_skipped(e)
    if cfg.generation.concurrency > 1 and cfg.guardrails.enabled:
        raise UsageError("--concurrency above 1 does not combine with --guardrails yet (the rails run one question "
                         "at a time)")
    with pipeline(cfg, llm=llm) as pipe:
        inner = getattr(pipe, "pipeline", pipe)
        store = inner.store
        warn_unknown_labels(cfg.questions, (d for q in questions for d in q.relevant_doc_ids or []),
                            store.label_targets())
        result = run_questions(lambda q: pipe.answer(q.question, q), questions, run, config_hash=pipe.config_hash,
                               progress=progress, salt=store.manifest.corpus_checksum,
                               concurrency=cfg.generation.concurrency, reuses=inner.reuses)
        stats = getattr(inner.llm, "stats", None)
        result.requests = stats.as_dict() if stats is not None else None
    run.record_input_errors("run", errors, ours=lambda text: had_log or not text.strip())
    return result


def write_run_summary(run: RunFolder, traces: list[Trace], requests: dict | None = None) -> dict:
    """run_summary.json (outcomes, retrieval, latency; with ``requests``, what this invocation sent to the model
    server: retries and failures by kind and endpoint) beside the traces, unless a file of someone else's is there."""
    summary = summarize_traces(traces)
    if requests is not None:
        summary["requests"] = requests
    run.write_if_ours(RUN_SUMMARY, json.dumps(summary, indent=2), ours=is_run_summary)
    return summary


# --- evaluation --------------------------------------------------------------------------------------------------

def read_out(traces: list[Trace], errors: list, notes: list[str], limit: int | None) -> list[Trace]:
    """What a read of evaluation rows found, said (each skipped row, each warning), and the first ``limit`` traces."""
    for e in errors:
        report_skipped(e)
    for note in notes:
        warn(note)
    return traces[:limit] if limit else traces


def evaluate_file(source: str | Path, run_dir: str | Path, selection: Selection, *, nli_model: str | None = None,
                  nli_threshold: float | None = None, judge_base_url: str | list[str] | None = None,
                  judge_model: str = "qwen2.5-0.5b", limit: int | None = None, batch_size: int = 16,
                  progress: bool = True, engine: str = "local", ray: RayOptions | None = None,
                  judge_concurrency: int = 1, judge_max_chars: int | None = None,
                  request_stats: list | None = None) -> EvalRun:
    """Judge a JSONL of traces, generic rows or ragas rows into ``run_dir`` (a rerun resumes); bad lines are reported,
    skipped and listed in input_errors.txt. ``engine`` "ray" judges the batches on Ray Data actors (``ray``: where and
    how many); the run folder is the same. ``judge_base_url`` may be a fleet (a list); ``judge_concurrency`` requests
    are kept in flight; ``judge_max_chars``: characters of text one llm-judge ask quotes (None: its default). When an
    LLM judge sent requests here, their retries and failures are written to the run folder's requests.json and
    appended (as a dict) to ``request_stats``."""
    run = RunFolder(run_dir)
    build = functools.partial(built_judges, selection, nli_model=nli_model, nli_threshold=nli_threshold,
                              judge_base_url=judge_base_url, judge_model=judge_model,
                              judge_concurrency=judge_concurrency, judge_max_chars=judge_max_chars)
    sent: list = []
    eng = make_engine(engine, build, ray)
    # the folder is this evaluation's until it is done; before loading anything, a folder we may not write into, or
    # one another evaluation is writing (another thread or process), fails now
    with run.claim():
        notes: list[str] = []
        traces, errors = load_traces(source, warnings=notes)
        traces = read_out(traces, errors, notes, limit)
        with build(request_stats=sent) as judges:  # on the driver they name the evaluation; an engine's workers
            result = evaluate(traces, metrics=selection.metrics, judges=judges, run=run,  # build their own
                              batch_size=batch_size, input_errors=errors, source=str(source), progress=progress,
                              warnings=notes, engine=eng)
        from_workers = getattr(eng, "request_counts", None)  # on Ray the workers' judges sent them, not the driver's
        if sent or from_workers:
            counts = from_workers or sent[0].as_dict()
            run.write_json(REQUESTS, counts)
            if request_stats is not None:
                request_stats.append(counts)
    return result


@dataclass(frozen=True)
class RayOptions:
    """``--engine ray``: ``address`` None starts Ray on this machine, "auto" joins the running cluster,
    "ray://host:port" connects as a client; ``init``: more ``ray.init`` arguments when Ray is started here."""

    address: str | None = None
    num_workers: int = 1
    gpus_per_worker: float = 0.0
    init: dict | None = None


ENGINES = ("local", "ray")


def make_engine(name: str, build: Callable, ray: RayOptions | None = None) -> Engine | None:
    """The engine named (None: the local one, in this process). Ray is imported only for "ray"."""
    if name == "local":
        if ray is not None:  # given at all, even at their defaults: the local engine would ignore them
            raise UsageError("--ray-address, --num-workers and --gpus-per-worker need --engine ray")
        return None
    if name == "ray":
        from eval.ray_engine import RayEngine  # noqa: PLC0415 - lazy: only --engine ray loads Ray

        opts = ray or RayOptions()
        return RayEngine(build, address=opts.address, num_workers=opts.num_workers,
                         gpus_per_worker=opts.gpus_per_worker, init=dict(opts.init or {}))
    raise UsageError(f"--engine: unknown engine {name!r} (valid: {', '.join(ENGINES)})")


def nothing_measured(summary: dict) -> str | None:
    """Why a run measured nothing at all (every result unmeasured or not applicable), or None when it measured."""
    if any(m["n"] > 0 for m in summary["metrics"]):
        return None
    reasons: dict[str, int] = {}
    for m in summary["metrics"]:
        for reason, n in m.get("unmeasured_reasons", {}).items():
            reasons[reason] = reasons.get(reason, 0) + n
    top = max(reasons, key=lambda r: reasons[r]) if reasons else "every result was not applicable"
    return f"nothing was measured ({top})"


@dataclass
class Judged:
    trace: Trace
    judgement: Judgement
    diagnosis: Diagnosis


def judge(traces: list[Trace], judges: Sequence[Judge], metrics: Sequence[str],
          batch_size: int | None = None) -> list[Judgement]:
    """Traces judged in memory, ``batch_size`` per judge call (default: all in one), nothing written."""
    size = batch_size or max(1, len(traces))
    return [j for start in range(0, len(traces), size) for j in judge_batch(traces[start : start + size], metrics,
                                                                             judges)]


def judge_one(trace: Trace, judges: Sequence[Judge], metrics: Sequence[str]) -> Judged:
    """One trace judged and diagnosed in memory (nothing written): the playground."""
    judgement = judge([trace], judges, metrics)[0]
    return Judged(trace, judgement, classify(judgement))


# --- diagnostics and the gate ------------------------------------------------------------------------------------

def diagnose_run(run_dir: str | Path, *, save: bool = True) -> tuple[list[Judgement], list[Diagnosis], dict]:
    """Every current judgement of the run classified; diagnoses.jsonl and diagnosis.json written (``save``; else the
    caller saves them with save_diagnoses, having kept them first: the Python API)."""
    run = RunFolder(run_dir)
    if not run.path.is_dir():
        raise InputError(run.path, "run folder not found (a folder written by `ragdoctor eval`)")
    judgements = run.judgements()
    if not judgements:
        raise InputError(run.path, "no judged samples (results.jsonl): evaluate first with `ragdoctor eval`")
    keys = run.current_keys()
    expected = len(keys[1]) if keys else len(judgements)
    if len(judgements) < expected:  # the evaluation stopped early: say the diagnosis covers part of the run
        warn(f"{run.path}: {expected - len(judgements)} of the run's {expected} samples are not judged yet (its "
             f"evaluation stopped early): diagnosed the {len(judgements)} judged; rerun `ragdoctor eval` to finish")
    diagnoses, report = diagnose_judgements(judgements, run.path, in_run=expected)
    if save:
        save_diagnoses(run, diagnoses, report)
    return judgements, diagnoses, report


def diagnose_judgements(judgements: list[Judgement], run_dir: str | Path,
                        in_run: int | None = None) -> tuple[list[Diagnosis], dict]:
    """``judgements`` (of the run ``run_dir``, ``in_run`` samples in all) classified, nothing read or written: the
    Python API diagnoses the judgements its result holds, whatever the folder holds now."""
    if not judgements:
        raise InputError(run_dir, "no judged samples (results.jsonl): evaluate first with `ragdoctor eval`")
    diagnoses, report = diagnose(judgements)
    report["samples"] = {"judged": len(judgements), "in_run": in_run if in_run is not None else len(judgements)}
    return diagnoses, report


def save_diagnoses(run: RunFolder, diagnoses: list[Diagnosis], report: dict, *, run_key: str | None = None) -> None:
    """diagnoses.jsonl and diagnosis.json into ``run`` (``run_key``: the evaluation diagnosed, default the folder's
    current one). A write the file system refuses (a read-only run folder, a full disk) is an InputError naming the
    file in one line (``RUN/diagnoses.jsonl: Read-only file system``), as the CLI prints every OSError, so the API
    raises the project's error, not a raw OSError."""
    try:
        run.write_diagnoses(diagnoses, report, run_key=run_key)
    except OSError as exc:
        where = exc.filename if exc.filename not in (None, "") else run.file(DIAGNOSES)
        raise InputError(where, f"{exc.strerror or exc}: the diagnoses could not be saved") from None


def probe(run_dir: str | Path, cfg: PipelineConfig, judgements: list[Judgement], diagnoses: list[Diagnosis],
          report: dict, *, judge: str = "nli", nli_model: str | None = None, limit: int | None = None) -> int:
    """Regenerate the failed samples' answers with changed contexts (diagnostics/probes.py); the root causes go into
    the report and the diagnoses, rewritten. Returns how many samples were probed."""
    check_nli_model(nli_model, load=judge == "nli")
    scorer = make_judge(judge, JudgeOptions(nli_model=nli_model))

    def correctness(t: Trace) -> float | None:
        r = scorer.judge("answer_correctness", [t])[0]
        return r.value if r.measured else None

    from rag.session import open_pipeline  # noqa: PLC0415 - lazy: see the imports

    with open_pipeline(cfg) as pipe:
        n = probe_run(diagnoses, {j.sample_id: j.trace for j in judgements if j.trace}, pipe.generate, correctness,
                      pipe.chunks_of, limit=limit)
    causes: dict[str, int] = {}
    for d in diagnoses:
        if d.probe and d.probe.get("root_cause"):
            causes[d.probe["root_cause"]] = causes.get(d.probe["root_cause"], 0) + 1
    report["probe_root_causes"] = causes
    save_diagnoses(RunFolder(run_dir), diagnoses, report)
    return n


def gate_run(run: str | Path, cfg: GateConfig, junit: str | Path | None = None, *,
             show: Callable[[int, list[Check]], None] | None = None,
             skip_report: Callable[[InputError], None] | None = None) -> tuple[int, list[Check]]:
    """The gate's checks of a run (or its summary.json); 0 when every one passed, else 1. JUnit XML to ``junit``.
    With ``cfg.use_ppi`` the run's labels.jsonl is read now (labels added since the evaluation count).

    In order: the summary is read (a run that cannot be read is blamed on its summary, not on the report beside it);
    ``junit`` is checked (a path that cannot take the report is refused before any verdict is reached); the checks are
    made and handed to ``show`` (the CLI prints the verdict); only then is the report written, so a write that fails
    (a full disk) never costs the verdict. A report that cannot be written raises an InputError naming it, or, given
    ``skip_report`` (the default RUN/gate.xml), is handed to it and skipped: the verdict and its status stand."""
    def report_step(step: Callable[[], object]) -> bool:
        """``step()`` on the report; False when it was refused and ``skip_report`` took it."""
        try:
            step()
        except InputError as exc:
            if skip_report is None:
                raise
            skip_report(exc)
            return False
        return True

    summary = load_summary(run)
    if junit and not report_step(functools.partial(junit_path, junit)):
        junit = None
    calibrated = None
    if cfg.use_ppi:
        from eval.calibration import for_run  # noqa: PLC0415 - only the PPI gate reads the labels

        calibrated = for_run(Path(run) if Path(run).is_dir() else Path(run).parent)
    checks = check(summary, cfg, calibrated)
    code = 0 if all(c.passed for c in checks) else 1
    if show is not None:
        show(code, checks)
    if junit:
        report_step(functools.partial(write_junit, checks, junit))
    return code, checks
