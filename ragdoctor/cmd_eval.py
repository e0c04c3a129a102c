"""`ragdoctor eval | gate`: score traces (or any JSONL) into a run folder; gate CI on a run's summary."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from corpora.errors import InputError, UsageError, warn
from corpora.run_folder import GATE_REPORT, TRACES
from eval.gate import GateConfig, load_gate_config, parse_threshold
from eval.judges.registry import DEFAULT_METRICS, JUDGES
from rag.fleet import render_requests
from rag.models import DEFAULT_GGUF
from ragdoctor.cmd_pipeline import run_name
from ragdoctor.options import JUDGE_MAX_CHARS_HELP, base_urls
from ragdoctor.table import ci_text, render


def default_eval_dir(source: Path, name: str | None) -> Path:
    if name:
        return Path("runs") / run_name(name)
    if source.name == TRACES:  # a pipeline run folder: results go beside its traces
        return source.parent
    return Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S")


def render_eval_summary(summary: dict) -> str:
    rows = []
    for m in summary["metrics"]:
        ci = ci_text(m["ci_low"], m["ci_high"])
        name = m["metric"] + (" (lower is better)" if m.get("higher_is_better") is False else "")
        rows.append((name, m["judge"], m["n"], m["mean"], ci, m.get("n_unmeasured"), m.get("n_not_applicable")))
    share = summary.get("unmeasured_share")
    foot = f"\nunmeasured share: {share:.3f}" if share is not None else ""
    return render(["metric", "judge", "n", "mean", "95% CI", "unmeasured", "n/a"], rows) + foot


def ray_options(args: argparse.Namespace):
    """--ray-address, --num-workers, --gpus-per-worker (None when none was given)."""
    from ragdoctor.flow import RayOptions  # noqa: PLC0415 - lazy: see cmd_eval

    given = (args.ray_address, args.num_workers, args.gpus_per_worker)
    if given == (None, None, None):
        return None
    return RayOptions(address=args.ray_address, num_workers=1 if args.num_workers is None else args.num_workers,
                      gpus_per_worker=args.gpus_per_worker or 0.0)


def cmd_eval(args: argparse.Namespace) -> int:
    from ragdoctor import flow  # noqa: PLC0415 - lazy in every command: the library loads when one runs

    source = Path(args.traces)
    if args.out and args.name:
        raise UsageError("--out and --name both name the run folder: give one")
    selection = flow.Selection.of(args.judges, args.metrics, args.nli_model)
    flow.unused_judge_options({name: getattr(args, name) for name in flow.JUDGE_OPTION_READERS}, selection.judges,
                              label=lambda name: "--" + name.replace("_", "-"))
    run_dir = Path(args.out) if args.out else default_eval_dir(source, args.name)
    sent: list[dict] = []
    result = flow.evaluate_file(source, run_dir, selection, nli_model=args.nli_model, nli_threshold=args.nli_threshold,
                                judge_base_url=base_urls(args.judge_base_url, "--judge-base-url"),
                                judge_model=args.judge_model or DEFAULT_GGUF,
                                limit=args.limit, batch_size=args.batch_size, engine=args.engine, ray=ray_options(args),
                                judge_concurrency=args.judge_concurrency or 1, judge_max_chars=args.judge_max_chars,
                                request_stats=sent)
    print(render_eval_summary(result.summary))
    for counts in sent:
        print("\njudge " + render_requests(counts))
    if result.summary.get("calibrated"):
        from ragdoctor.cmd_labels import render_calibrated  # noqa: PLC0415 - lazy: see above

        print("\n" + render_calibrated(result.summary["calibrated"]))
    print(f"\nrun folder: {run_dir} ({result.new} judged, {result.resumed} resumed, "
          f"{len(result.input_errors)} bad records skipped)")
    why = flow.nothing_measured(result.summary)
    if why:
        print(f"ragdoctor: error: {why}; the results are saved in {run_dir}", file=sys.stderr)
        return 2
    return 0


def gate_config(pyproject: str | Path | None, minimums: list[str] | None = None, max_unmeasured: float | None = None,
                ci_lower: bool = False, ppi: bool = False, ppi_fallback: bool = False) -> GateConfig:
    """[tool.ragdoctor.gate] from ``pyproject``, overridden by --min, --max-unmeasured, --ci-lower, --ppi and
    --ppi-fallback."""
    cfg = load_gate_config(pyproject)
    in_file = {"use_ci_lower": cfg.use_ci_lower, "use_ppi": cfg.use_ppi}
    table = f"{Path(pyproject if pyproject is not None else 'pyproject.toml')} [tool.ragdoctor.gate]"
    flags: dict[str, float] = {}
    for text in minimums or []:  # a flag overrides the file's minimum; two flags for one metric contradict
        name, value = parse_threshold(text)
        if name in flags:
            raise UsageError(f"--min: '{name}' is given twice ({flags[name]:g} and {value:g})")
        flags[name] = cfg.minimums[name] = value
    if max_unmeasured is not None:
        cfg.max_unmeasured = max_unmeasured
    if ci_lower:
        cfg.use_ci_lower = True
    if ppi:
        cfg.use_ppi = True
    if ppi_fallback:
        cfg.ppi_fallback = True
    if cfg.ppi_fallback and not cfg.use_ppi:  # a fallback from no PPI estimate would change nothing: say so
        raise UsageError("--ppi-fallback (ppi_fallback in [tool.ragdoctor.gate]) needs --ppi (or use_ppi = true)")
    unused_estimate_options(cfg, ci_lower, ppi, in_file, table)
    return cfg


# how `ragdoctor gate` names the options unused_estimate_options refuses (the Python API and the pytest plugin give
# their own arguments' names)
GATE_FLAG_NAMES = {"use_ci_lower": "--ci-lower", "use_ppi": "--ppi",
                   "ppi_fallback": "--ppi-fallback (ppi_fallback = true)",
                   "minimum": "--min METRIC=VALUE or min in [tool.ragdoctor.gate]"}


def unused_estimate_options(cfg: GateConfig, ci_lower: bool, ppi: bool, in_file: dict[str, bool],
                            table: str = "[tool.ragdoctor.gate]", names: Mapping[str, str] | None = None) -> None:
    """--ci-lower and --ppi (use_ci_lower, use_ppi in [tool.ragdoctor.gate]) choose the number a minimum is compared
    with: refused where they would change nothing. Without a minimum (only --max-unmeasured) there is nothing to
    compare. With --ppi every minimum is compared with the lower bound of the PPI-corrected 95% CI, so --ci-lower acts
    only with --ppi-fallback (the judge's own CI lower bound for a metric with too few labels); use_ci_lower = true in
    the file beside an explicit --ppi is the file's default estimate that --ppi overrides, not refused. ``ci_lower``
    and ``ppi``: given by the caller (not read from the file); ``names``: how the caller names the options
    (GATE_FLAG_NAMES's keys; the CLI's flags by default). The CLI, ``EvalResult.gate`` and the pytest plugin all call
    this, so each refuses what the others refuse."""
    spelled = {**GATE_FLAG_NAMES, **(names or {})}

    def name(flag: bool, key: str) -> str:
        return spelled[key] if flag else f"{key} = true in {table}"

    if not cfg.minimums:
        for given, key, on in ((ci_lower, "use_ci_lower", cfg.use_ci_lower), (ppi, "use_ppi", cfg.use_ppi)):
            if on:
                raise UsageError(f"{name(given, key)} chooses what a minimum is compared with, and there is no "
                                 f"minimum ({spelled['minimum']}): it would do nothing")
    if cfg.use_ppi and cfg.use_ci_lower and not cfg.ppi_fallback and (ci_lower or in_file["use_ppi"]):
        raise UsageError(f"{name(ci_lower, 'use_ci_lower')} would do nothing with {name(ppi, 'use_ppi')}: every "
                         "minimum is then compared with the lower bound of the PPI-corrected 95% CI; it only picks the "
                         f"judge's CI lower bound for {spelled['ppi_fallback']}: add that, or drop it")


def render_checks(code: int, checks: list) -> str:
    lines = [("PASS  " if c.passed else "FAIL  ") + c.message for c in checks]
    return "\n".join([*lines, f"gate: {'passed' if code == 0 else 'FAILED'} ({sum(c.passed for c in checks)}/"
                               f"{len(checks)} checks)"])


def cmd_gate(args: argparse.Namespace) -> int:
    from ragdoctor import flow  # noqa: PLC0415 - lazy: see cmd_eval

    cfg = gate_config(args.pyproject, args.min, args.max_unmeasured, args.ci_lower, args.ppi, args.ppi_fallback)
    if not cfg.has_thresholds:
        raise UsageError("no thresholds: pass --min METRIC=VALUE or set [tool.ragdoctor.gate] in pyproject.toml")

    def show(code: int, checks: list) -> None:  # the verdict is out before any report is written
        print(render_checks(code, checks), flush=True)

    def skip_default(exc: InputError) -> None:
        warn(f"no JUnit report written ({exc}); pass --junit PATH for one")

    junit, skip = args.junit, None
    if junit is None:  # the default report beside the summary: a place that cannot take it never costs the verdict
        junit = (Path(args.run) if Path(args.run).is_dir() else Path(args.run).parent) / GATE_REPORT
        skip = skip_default
    # a --junit PATH that cannot take the report is refused before the verdict; one that fails to be written after it
    # (a full disk) is one error line naming it, exit 2, below the verdict already printed
    code, _ = flow.gate_run(args.run, cfg, junit, show=show, skip_report=skip)
    return code


def register(sub: argparse._SubParsersAction, pipeline_options) -> None:  # noqa: ARG001 - eval runs no pipeline
    p = sub.add_parser("eval", help="score traces or any (question, contexts, answer) JSONL into a run folder")
    p.add_argument("traces", help="traces.jsonl from `ragdoctor run`, a generic JSONL, ragas EvaluationDataset rows, "
                                  "a .parquet of rows, or OpenInference spans (OTLP JSON, a Phoenix export)")
    p.add_argument("--metrics", help=f"comma-separated (default {','.join(DEFAULT_METRICS)})")
    p.add_argument("--judges", help=f"comma-separated from {','.join(JUDGES)} (default: nli when shipped, lexical, "
                                    "embedding, labels)")
    p.add_argument("--out", help="run folder (default: beside traces.jsonl, else runs/<timestamp>)")
    p.add_argument("--name", help="run folder name under runs/")
    p.add_argument("--nli-model", help="CrossEncoder folder for the nli judge (default: the shipped judge)")
    p.add_argument("--nli-threshold", type=float, metavar="P",
                   help="P(supported) at which the nli judge calls a claim supported (default 0.5; calibrate it on "
                        "your own labels with `ragdoctor meta-eval --dataset jsonl`)")
    p.add_argument("--judge-base-url", action="append",
                   help="OpenAI-compatible URL for the llm/ragas judges (default: bundled model); repeat it for a "
                        "fleet (round-robin, a retry goes to the next one)")
    p.add_argument("--judge-concurrency", type=int, metavar="N",
                   help="judge requests in flight at once (default 1; the bundled model gets N parallel slots)")
    p.add_argument("--judge-max-chars", type=int, metavar="N", help=JUDGE_MAX_CHARS_HELP)
    p.add_argument("--judge-model", help=f"llm/ragas judges' model: bundled GGUF name/path or server model (default "
                                         f"{DEFAULT_GGUF})")
    p.add_argument("--limit", type=int, help="only the first N records (N >= 1)")
    p.add_argument("--batch-size", type=int, default=16, help="samples per judge call (>= 1)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="where the batches are judged: in this process (default) or on Ray Data actors (pip install "
                        "'ragdoctor[ray]'); the run folder is the same")
    p.add_argument("--ray-address", metavar="auto|ray://HOST:PORT",
                   help="--engine ray: the cluster to join (default: start Ray on this machine)")
    p.add_argument("--num-workers", type=int, metavar="N", help="--engine ray: judge actors (default 1)")
    p.add_argument("--gpus-per-worker", type=float, metavar="G",
                   help="--engine ray: GPUs per actor (default 0; the NLI judge runs on the actor's GPU)")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("gate", help="exit 0 if a run meets its thresholds, 1 if not, 2 on usage/input error")
    p.add_argument("run", help="run folder (or its summary.json)")
    p.add_argument("--min", action="append", metavar="METRIC[:JUDGE]=VALUE", help="minimum mean (repeatable)")
    p.add_argument("--max-unmeasured", type=float, help="largest allowed share of unmeasured results, in [0, 1]")
    p.add_argument("--ci-lower", action="store_true", help="compare the 95%% CI lower bound, not the mean")
    p.add_argument("--ppi", action="store_true",
                   help="compare the lower 95%% bound of the PPI-corrected mean (the judge calibrated by the run's "
                        "human labels, labels.jsonl); a metric with too few labels fails, saying why")
    p.add_argument("--ppi-fallback", action="store_true",
                   help="with --ppi: a metric with too few labels is checked on the judge's own estimate instead")
    p.add_argument("--junit", help="JUnit XML report path (default RUN/gate.xml)")
    p.add_argument("--pyproject", help="where [tool.ragdoctor.gate] thresholds live (default ./pyproject.toml when "
                                       "there is one; a file named here must exist)")
    p.set_defaults(func=cmd_gate)
