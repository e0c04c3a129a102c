"""The Python API: ``ragdoctor.evaluate(data)`` and ``ragdoctor.Pipeline``, over the same flow the CLI runs
(ragdoctor/flow.py) and into the same run folder, so ``ragdoctor dashboard``, ``gate`` and ``diagnose`` read it.

    import ragdoctor
    result = ragdoctor.evaluate(rows, metrics=["groundedness", "answer_correctness"], judges=["lexical"])
    result.to_pandas()                   # one row per sample: question, answer, a column per metric (and per judge)
    result.summary()                     # per metric and judge: n, mean, 95% CI, unmeasured and not-applicable counts
    result.gate({"groundedness": 0.8})   # the CI gate's verdict and its checks
    result.diagnose()                    # the failure category of every sample, with the rule that fired"""
from __future__ import annotations

import dataclasses
import numbers
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from corpora.errors import NOTICES, InputError, UsageError, warn
from corpora.jsonl import validation_error
from corpora.records import Diagnosis, Judgement, Question, Trace
from corpora.run_folder import RunFolder
from eval.adapters import traces_from
from eval.gate import Check, GateConfig, check, check_ppi_flags, given_minimums, unit_threshold
from eval.judges.base import Judge
from eval.judges.registry import DEFAULT_METRICS, default_judges, parse_judges, parse_metrics
from eval.judging import evaluate as judge_traces
from eval.metrics import find
from eval.summary import results_frame
from rag.config import PipelineConfig, load_config
from rag.models import DEFAULT_GGUF
from rag.offline import OFFLINE_ENV, set_offline_env
from rag.run_questions import RunResult
from ragdoctor import flow
from ragdoctor.cmd_eval import unused_estimate_options
from ragdoctor.dashboard.data import samples_frame
from ragdoctor.options import MAX_JUDGE_CHARS, MIN_JUDGE_CHARS, api_names, base_urls, true_or_false

SUMMARY_COLUMNS = ["metric", "judge", "n", "mean", "ci_low", "ci_high", "n_unmeasured", "n_not_applicable",
                   "higher_is_better"]
# the options EvalResult.gate shares with `ragdoctor gate` (cmd_eval.unused_estimate_options), as the API names them
GATE_NAMES = {"use_ci_lower": "ci_lower=True", "use_ppi": "ppi=True", "ppi_fallback": "ppi_fallback=True",
              "minimum": "thresholds={metric: minimum}"}
@contextmanager
def _as_api() -> Iterator[None]:
    """A UsageError of the validators the CLI shares says the API's argument, not the CLI's flag."""
    try:
        yield
    except UsageError as exc:
        raise UsageError(api_names(str(exc))) from None


def _offline() -> None:
    """The offline environment (rag/offline.py), set before the first model or library loads; what it set is logged
    once, so a host application can see why its hub is offline (a value it set first would have won)."""
    set_now = set_offline_env()
    if set_now:
        NOTICES.info("ragdoctor runs offline: set %s for this process (a value set before wins)",
                     ", ".join(f"{k}={OFFLINE_ENV[k]}" for k in set_now))


@dataclass
class GateResult:
    passed: bool
    checks: list[Check]

    def __bool__(self) -> bool:
        return self.passed


@dataclass
class EvalResult:
    """What ``evaluate`` measured, and the run folder it wrote (``run_dir``).

    The result keeps its own judgements: every table it gives is of what this evaluation measured, whatever its folder
    holds later. ``run_key`` names the evaluation (its configuration and its samples' content; config.json carries it):
    when a later evaluation of other data or settings has rewritten the folder, ``diagnose`` still diagnoses this
    result's judgements but leaves the folder's files alone (a warning says so), and what needs the folder's labels
    (``calibrated``, ``gate(ppi=True)``) is an InputError naming the folder."""

    run_dir: Path
    judgements: list[Judgement]
    summary_data: dict
    input_errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    diagnoses: list[Diagnosis] | None = None
    run_key: str | None = None

    def _folder_changed(self, what: str) -> InputError | None:
        """Why the run folder no longer holds this result's evaluation (its config.json does not carry this run key),
        as an error saying ``what`` follows; None while it does. A result without a run key (built by hand) takes the
        folder as its own."""
        key = self.run_key or self.summary_data.get("run_key")
        now = (RunFolder(self.run_dir).config() or {}).get("run_key")
        if key is None or now == key:
            return None
        why = ("holds a later evaluation than this result's (another evaluate() into the same folder)" if now else
               "no longer holds this result's evaluation (its config.json is gone or unreadable)")
        return InputError(self.run_dir, f"{why}: {what}")

    def to_pandas(self, *, long: bool = False) -> pd.DataFrame:
        """One row per sample (question, answer, outcome, and per metric the most trusted judge's value in column
        ``metric`` and every judge's in ``metric:judge``); ``long``: one row per sample x metric x judge, with each
        result's status and reason (``unmeasured``/``not_applicable`` rows carry no value)."""
        true_or_false(long, "long")
        results = results_frame(self.judgements)
        if long:
            return results
        by_id = {j.sample_id: j for j in self.judgements}
        traces = {sid: j.trace for sid, j in by_id.items() if j.trace is not None}
        wide = samples_frame(results.astype({"value": float}), by_id, traces,
                             {d.sample_id: d for d in self.diagnoses or []})
        answers = {sid: (t.answer, t.reference) for sid, t in traces.items()}
        wide.insert(4, "answer", wide["sample_id"].map(lambda s: answers.get(s, ("", None))[0]))
        wide.insert(5, "reference", wide["sample_id"].map(lambda s: answers.get(s, ("", None))[1]))
        return wide

    def summary(self) -> pd.DataFrame:
        """Per (metric, judge): n measured, mean, its 95% CI, unmeasured and not-applicable counts, and
        ``higher_is_better`` (False for noise_sensitivity), as summary.json has them. The CI is the percentile
        bootstrap's, except below 5 measured values or when every value is the same (a bootstrap would claim certainty
        there): then the Wilson interval of the mean (eval.mathx.mean_ci)."""
        return pd.DataFrame([{c: _higher_is_better(m) if c == "higher_is_better" else m.get(c) for c in SUMMARY_COLUMNS}
                             for m in self.summary_data["metrics"]], columns=SUMMARY_COLUMNS)

    @property
    def unmeasured_share(self) -> float | None:
        return self.summary_data.get("unmeasured_share")

    def gate(self, thresholds: dict[str, float] | None = None, *, max_unmeasured: float | None = None,
             ci_lower: bool = False, ppi: bool = False, ppi_fallback: bool = False) -> GateResult:
        """The CI gate: ``thresholds`` maps ``metric`` or ``metric:judge`` to a minimum mean (or, with ``ci_lower``,
        a minimum lower bound of the 95% CI; with ``ppi``, of the PPI-corrected 95% CI, as ``ragdoctor gate --ppi``).
        A run with nothing measured fails. What ``ragdoctor gate`` refuses (exit 2) is a UsageError, checked by the
        same functions: no threshold at all, ``ppi_fallback`` without ``ppi``, ``ci_lower`` or ``ppi`` without a
        minimum (they choose what a minimum is compared with), ``ci_lower`` beside ``ppi`` without ``ppi_fallback``
        (every minimum is then compared with the PPI-corrected bound), a metric the run did not evaluate."""
        for name, flag in (("ci_lower", ci_lower), ("ppi", ppi), ("ppi_fallback", ppi_fallback)):
            true_or_false(flag, name)
        minimums = given_minimums(thresholds, "thresholds")
        check_ppi_flags(ppi, ppi_fallback)
        cfg = GateConfig(minimums, None if max_unmeasured is None else unit_threshold(max_unmeasured, "max_unmeasured"),
                         ci_lower, ppi, ppi_fallback)
        unused_estimate_options(cfg, ci_lower, ppi, {"use_ci_lower": False, "use_ppi": False}, names=GATE_NAMES)
        if not cfg.has_thresholds:
            raise UsageError("no thresholds: give thresholds={metric: minimum} or max_unmeasured")
        with _as_api():  # a metric the run did not evaluate: "evaluate(..., metrics=..., judges=...)", not the CLI's
            checks = [dataclasses.replace(c, detail=api_names(c.detail))  # "or pass ppi_fallback=True", not the flag
                      for c in check(self.summary_data, cfg, self.calibrated_rows() if ppi else None)]
        return GateResult(all(c.passed for c in checks), checks)

    def calibrated_rows(self) -> list[dict]:
        """eval.calibration.for_run: the judges calibrated by the run folder's labels.jsonl, read now. When a later
        evaluation has rewritten the folder, its labels are of that evaluation's samples: an InputError naming it."""
        from eval.calibration import for_run  # noqa: PLC0415 - only needed with labels

        changed = self._folder_changed("its labels are not this result's samples'; evaluate this data again to "
                                       "calibrate it")
        if changed is not None:
            raise changed
        return for_run(self.run_dir)

    def calibrated(self) -> pd.DataFrame:
        """Per (metric, judge) with human labels: labels, the judge's mean, the PPI-corrected mean with its 95% CI
        (``status`` "ok", or "unmeasured" with the ``reason``, e.g. below 30 labels: the PPI columns are then empty),
        AUROC and accuracy against the labels, and the ``note`` column ``ragdoctor summary`` prints."""
        from ragdoctor.dashboard.data import calibrated_table  # noqa: PLC0415

        rows = self.calibrated_rows()
        table = calibrated_table(rows)
        at = table.columns.get_loc("PPI CI high") + 1  # beside the estimate they qualify, as to_pandas(long=True)
        table.insert(at, "status", [r["status"] for r in rows])
        table.insert(at + 1, "reason", [r.get("reason") for r in rows])
        return table

    def diagnose(self) -> pd.DataFrame:
        """Every sample's failure category (diagnostics/taxonomy.py), the rule that fired and the secondary
        categories; written into the run folder as ``ragdoctor diagnose`` does (``self.diagnoses`` keeps them). A run
        folder that cannot take the files (read-only, a full disk) is an InputError naming the file in one line, as
        ``ragdoctor diagnose`` exits 2 on it; the diagnoses made are kept in ``self.diagnoses`` all the same.
        Always this result's own judgements: when a later evaluation has rewritten the folder, they are diagnosed all
        the same, and the folder's files (the later evaluation's) are left as they are, with a warning."""
        diagnoses, report = flow.diagnose_judgements(self.judgements, self.run_dir)
        self.diagnoses = diagnoses
        changed = self._folder_changed("diagnosed this result's own judgements; the folder's diagnoses are left as "
                                       "they are")
        if changed is not None:
            warn(str(changed))
        else:
            flow.save_diagnoses(RunFolder(self.run_dir), diagnoses, report, run_key=self.run_key)
        return pd.DataFrame([{"sample_id": d.sample_id, "category": d.category, "rule": d.rule,
                              "secondary": ", ".join(d.secondary)} for d in diagnoses],
                            columns=["sample_id", "category", "rule", "secondary"])


def evaluate(data: Any, *, metrics: str | Sequence[str] | None = None,
             judges: str | Sequence[str] | Sequence[Judge] | None = None, out: str | Path | None = None,
             nli_model: str | Path | None = None, nli_threshold: float | None = None,
             judge_base_url: str | Sequence[str] | None = None,
             judge_model: str | None = None, judge_max_chars: int | None = None, batch_size: int = 16,
             limit: int | None = None, progress: bool = False) -> EvalResult:
    """Score ``data`` (a pandas DataFrame, a list of dicts, a JSONL path, a ragas ``EvaluationDataset``, Trace objects,
    or llama-index ``Response`` objects as ``(question, response)`` pairs) into the run folder ``out`` (default: a new
    temporary folder). ``metrics`` and ``judges`` are names as the CLI takes them (or built judges); by default the
    fast judges and every metric they measure. A rerun into the same folder resumes. Bad rows are skipped and listed
    in ``input_errors`` and, like ambiguous input (``warnings``), reported on the ``ragdoctor.notices`` logger (stderr
    unless you configure logging); a record with no valid row raises ``InputError``. ``limit``: the first N records.
    ``nli_model``, ``nli_threshold`` (P(supported) at which a claim counts as supported, in (0, 1)),
    ``judge_base_url`` and ``judge_model`` are read by the judges named (nli; llm and ragas), ``judge_max_chars``
    (characters of text one llm-judge ask quotes, an integer from 200 to 10,000,000; default 3,000, the bundled
    model's context: raise it for a server with a longer one; a cut is recorded in the evidence as ``judge_cut``) by
    the llm judge: given for none of them, they are refused. When nothing at all was measured (every result
    unmeasured or not applicable, where ``ragdoctor eval`` exits 2) the result says why in ``warnings``, also logged.
    Every argument is checked before any work, in one line naming it (UsageError): a blank path or name (``out=""``
    would be the current folder), a value of the wrong type, an option no judge run reads.
    The first call sets the offline environment (rag/offline.py; a value set before wins)."""
    data = _data(data)
    out = _path(out, "out", optional=True)
    nli_path = _path(nli_model, "nli_model", optional=True)
    nli_model = None if nli_path is None else str(nli_path)
    judge_model = _name(judge_model, "judge_model")
    base_url = _urls(judge_base_url, "judge_base_url")
    _offline()
    batch_size = positive_int(batch_size, "batch_size")
    limit = None if limit is None else positive_int(limit, "limit")
    if nli_threshold is not None:
        nli_threshold = open_unit(nli_threshold, "nli_threshold")
    if judge_max_chars is not None:
        judge_max_chars = int_in(judge_max_chars, MIN_JUDGE_CHARS, MAX_JUDGE_CHARS, "judge_max_chars")
    true_or_false(progress, "progress")
    options = {"nli_model": nli_model, "nli_threshold": nli_threshold, "judge_base_url": base_url,
               "judge_model": judge_model, "judge_max_chars": judge_max_chars}
    built = judges is not None and not isinstance(judges, str) and _built(judges)
    if built:
        judge_objs: list[Judge] = list(judges)  # type: ignore[arg-type]
        with _as_api():
            names = parse_metrics(flow.as_text(metrics, "metrics")) if metrics is not None else \
                [m for m in DEFAULT_METRICS if any(j.supports(m) for j in judge_objs)]
        given = [k for k, v in options.items() if v is not None]
        if given:
            raise UsageError(f"{given[0]}: the judges given are built objects, which do not read it (give it to the "
                             f"judge when you build it)")
        unmeasurable = [m for m in names if not any(j.supports(m) for j in judge_objs)]
        if unmeasurable or not names:
            raise UsageError(f"no judge given measures '{unmeasurable[0]}'" if unmeasurable else
                             "the judges given measure none of the metrics")
    else:
        with _as_api():  # an option no judge run reads is said before a named nli_model's folder is looked at
            named = flow.as_text(judges, "judges") if judges is not None else default_judges(nli_model)  # type: ignore[arg-type]
            flow.unused_judge_options(options, parse_judges(named))
            selection = flow.Selection.of(judges, metrics, nli_model)  # type: ignore[arg-type]
        names = selection.metrics
    warnings: list[str] = []
    traces, errors = traces_from(data, warnings)
    traces = flow.read_out(traces, errors, warnings, limit)
    run = RunFolder(out if out is not None else tempfile.mkdtemp(prefix="ragdoctor-"))
    with ExitStack() as stack:
        # the folder is this evaluation's until it is done: another evaluation of it meanwhile (a thread, a process) is
        # refused in one line naming it, and so is this one while another holds it, before any judge loads
        stack.enter_context(run.claim())
        if not built:
            with _as_api():  # a named nli_model that cannot load is refused here
                judge_objs = stack.enter_context(flow.built_judges(selection, nli_model=nli_model,
                                                                   nli_threshold=nli_threshold,
                                                                   judge_base_url=base_url,
                                                                   judge_model=judge_model or DEFAULT_GGUF,
                                                                   judge_max_chars=judge_max_chars,
                                                                   spell=api_names))
        ev = judge_traces(traces, metrics=names, judges=judge_objs, run=run, batch_size=batch_size,
                          input_errors=errors, source="ragdoctor.evaluate", progress=progress, warnings=warnings)
    notes = [*ev.warnings, *_nothing_measured(ev.summary)]
    return EvalResult(run.path, ev.judgements, ev.summary, ev.input_errors, notes, run_key=ev.summary.get("run_key"))


def _nothing_measured(summary: dict) -> list[str]:
    """Where ``ragdoctor eval`` exits 2 (flow.nothing_measured), the reason, logged: a result whose every value is
    missing is still a result, but must not pass for one that measured."""
    why = flow.nothing_measured(summary)
    if why is None:
        return []
    warn(why)
    return [why]


def _built(judges: Sequence[Any]) -> bool:
    """True for a list of built judges, False for a list of names; a mix, or something that is neither (a judge's
    class, not a judge built from it), is refused."""
    if not isinstance(judges, (list, tuple)):
        raise UsageError(f"judges: expected names (a comma-separated string or a list) or built judges, got {judges!r}")
    for j in judges:
        if isinstance(j, type):
            raise UsageError(f"judges: {j.__name__} is a class, not a built judge: give an instance of it "
                             f"({j.__name__}(...)) or a judge's name")
    objects = [callable(getattr(j, "judge", None)) and callable(getattr(j, "supports", None)) for j in judges]
    if any(objects) and not all(objects):
        bad = next(j for j, ok in zip(judges, objects, strict=True) if not ok)
        raise UsageError(f"judges: give names or built judges, not both ({bad!r} is not a built judge)")
    if not objects or all(isinstance(j, str) for j in judges):
        return False
    return all(objects)


def _path(value: object, name: str, *, optional: bool = False) -> str | Path | None:
    """A path argument: a str or an os.PathLike (None when ``optional``); a blank string (``""`` would be the current
    folder, ``"  "`` a folder named by spaces), or anything else, is a UsageError naming ``name``, as the CLI refuses
    ``--out ""``."""
    if value is None and optional:
        return None
    if isinstance(value, str):
        if not value.strip():
            raise UsageError(f"{name}: a blank value")
        return value
    if isinstance(value, os.PathLike):
        return Path(value)
    raise UsageError(f"{name}: expected a path (a str or a pathlib.Path), got {type(value).__name__}")


def _name(value: object, name: str) -> str | None:
    """A name argument (a model's): None (the default), or a string that is not blank, else UsageError naming
    ``name`` (a blank one is never read as the default)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{name}: expected a string, got {type(value).__name__}")
    if not value.strip():
        raise UsageError(f"{name}: a blank value")
    return value


def _urls(value: object, name: str) -> str | list[str] | None:
    """One URL or a list of them (a fleet), each an http(s) URL that is not blank, as ``--judge-base-url`` is
    checked; else UsageError naming ``name``."""
    if value is None:
        return None
    urls = [value] if isinstance(value, str) else value
    if not isinstance(urls, (list, tuple)) or not urls or not all(isinstance(u, str) for u in urls):
        raise UsageError(f"{name}: expected a URL or a list of URLs, got {value!r}")
    if not all(u.strip() for u in urls):
        raise UsageError(f"{name}: a blank value")
    return base_urls(list(urls), name)


def _data(data: object) -> object:
    """``evaluate``'s data, where it is a path: a blank string is a UsageError (it would read the current folder), and
    so is a string naming no file or folder (a question or an answer given where records belong)."""
    if not isinstance(data, (str, os.PathLike)):
        return data
    path = _path(data, "data")
    if not Path(path).expanduser().exists():  # type: ignore[arg-type]
        raise UsageError(f"data: {str(data)!r} is no file or folder (expected a JSONL path, a DataFrame, a list of "
                         f"records or (question, response) pairs)")
    return path


def _higher_is_better(row: dict) -> bool | None:
    """A summary row's ``higher_is_better``, from the metric's definition where the row predates the field."""
    if "higher_is_better" in row:
        return row["higher_is_better"]
    metric = find(row.get("metric", ""))
    return None if metric is None else metric.higher_is_better


def positive_int(value: object, name: str) -> int:
    """An integer >= 1 (never a bool, a float or a string), else UsageError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise UsageError(f"{name}: must be an integer >= 1, got {value!r}")
    return int(value)


def int_in(value: object, low: int, high: int, name: str) -> int:
    """An integer from ``low`` to ``high`` (never a bool, a float or a string), else UsageError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= int(value) <= high:
        raise UsageError(f"{name}: must be an integer >= {low} and <= {high}, got {value!r}")
    return int(value)


def open_unit(value: object, name: str) -> float:
    """A number strictly between 0 and 1 (never a bool or a string), else UsageError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < float(value) < 1:
        raise UsageError(f"{name}: must be a number > 0 and < 1, got {value!r}")
    return float(value)


class Pipeline:
    """The RAG pipeline: ``index()`` builds (or checks) the index, ``ask(question)`` answers one question as a Trace,
    ``run(questions, out)`` answers a question set into a run folder (resumable). ``config`` is a PipelineConfig, a
    dict of its fields, or a TOML file with a [pipeline] table; ``llm`` any ChatLLM (default: the configured server or
    the bundled model, started on first use and stopped by ``close()``)."""

    def __init__(self, config: PipelineConfig | dict | str | Path | None = None, *, llm: object | None = None):
        if isinstance(config, PipelineConfig):
            self.config = config
        elif isinstance(config, dict):  # the dict overrides the RAGDOCTOR_* environment, as flags do
            self.config = load_config(None, overrides=config, source="config")
        elif config is None or isinstance(config, (str, os.PathLike)):
            self.config = load_config(_path(config, "config", optional=True))
        else:
            raise UsageError(f"config: expected a PipelineConfig, a dict or a TOML path, got {type(config).__name__}")
        self.llm = llm
        self._stack = ExitStack()
        self._pipe: Any = None
        self._lock = threading.Lock()  # ask() from several threads builds one pipeline

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._stack.close()
            self._pipe = None

    def index(self, *, rebuild: bool = False) -> dict:
        """Build the index when missing or stale; its manifest (documents, chunks, embedder, ...) as a dict."""
        true_or_false(rebuild, "rebuild")
        _offline()
        store, built = flow.index(self.config, rebuild=rebuild)
        return {**store.manifest.model_dump(mode="json"), "built": built, "index_dir": str(store.index_dir)}

    def ask(self, question: str, *, reference: str | None = None, relevant_doc_ids: list[str] | None = None) -> Trace:
        """Answer one question (its labels, when given, go into the trace for the metrics that read them). The
        pipeline is built on the first call (one, whichever thread calls first) and kept until ``close()``."""
        _offline()
        record = _question({"id": "adhoc", "question": question, "reference": reference,
                            "relevant_doc_ids": relevant_doc_ids}, None)
        with self._lock:
            if self._pipe is None:
                self._pipe = self._stack.enter_context(flow.pipeline(self.config, llm=self.llm))
            pipe = self._pipe
        return pipe.answer(record.question, record)

    def run(self, questions: str | Path | Iterable[Question | dict] | None = None, *, out: str | Path,
            limit: int | None = None, progress: bool = False) -> RunResult:
        """Answer ``questions`` (a question-set JSONL path or "bundled", or Question objects, dicts or strings;
        default: the configured set) into ``out``, a run folder (its traces.jsonl and run_summary.json); a rerun
        resumes. In a list, a plain string is a question with the id ``q<position>``; a row that is not a question is
        an InputError naming it. A string given as ``questions`` itself is a path: one that names no file (``"What is
        ZeRO?"``) is a UsageError, as is a blank ``out`` (the current folder) or one that is no path."""
        run_dir = _path(out, "out")
        limit = None if limit is None else positive_int(limit, "limit")
        true_or_false(progress, "progress")
        _offline()
        cfg, objects = self.config, None
        if isinstance(questions, (str, os.PathLike)):
            path = _path(questions, "questions")
            if path != "bundled" and not Path(path).expanduser().exists():  # type: ignore[arg-type]
                raise UsageError(f"questions: {str(questions)!r} is no file (expected the path of a question-set "
                                 f"JSONL, or a list of questions: [\"What is ZeRO?\", ...])")
            cfg = cfg.model_copy(update={"questions": str(path)})
        elif questions is not None:
            if not isinstance(questions, Iterable) or isinstance(questions, (bytes, dict)):
                raise UsageError(f"questions: expected a JSONL path or an iterable of questions, got "
                                 f"{type(questions).__name__}")
            objects = [_question(q, i) for i, q in enumerate(questions, 1)]
            if not objects:
                raise InputError("questions", "no questions given")
        run = RunFolder(run_dir)  # type: ignore[arg-type]
        run.check_folder()  # never into a folder of the user's own files
        with _as_api():  # "generation.concurrency ... guardrails.enabled", the config's fields, not the CLI's flags
            result = flow.answer_questions(cfg, run.traces.path, questions=objects, limit=limit, llm=self.llm,
                                           progress=progress)
        flow.write_run_summary(run, result.traces)
        return result


def _question(row: object, position: int | None) -> Question:
    """A question of ``Pipeline.run`` (at ``position``) or ``ask`` (None): a Question, a dict of its fields, or a
    string (its text); anything else, or a field that does not validate, is a one-line InputError naming it."""
    where = "questions" if position is not None else "ask"
    if isinstance(row, Question):
        return row
    if isinstance(row, str) and position is not None:
        row = {"id": f"q{position}", "question": row}
    if not isinstance(row, dict):
        raise InputError(where, f"a value of type {type(row).__name__} is not a question (a dict, a Question or a "
                                f"string)",
                         line=position, field=None if position is not None else "question")
    try:
        return Question.model_validate(row)
    except ValidationError as exc:
        raise validation_error(where, position, exc) from None
