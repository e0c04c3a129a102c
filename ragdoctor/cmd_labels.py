"""`ragdoctor label | summary`: add a human label to a run (scripted labelling; the dashboard's Label page is the
interactive way), and print a run's summary with its PPI-calibrated means (labels.jsonl read now)."""
from __future__ import annotations

import argparse
import getpass
from pathlib import Path
from typing import get_args

from corpora.errors import InputError, UsageError, warn
from corpora.records import LabelMetric
from ragdoctor.table import ci_text, render

LABEL_METRICS = get_args(LabelMetric)
LABEL_SOURCE = "label"  # what corpora.labels.make_label names as the source of a field it refuses
OPTION_OF = {"sample_id": "sample"}  # Label's field -> the option that gave it
WORDS = {"yes": 1.0, "y": 1.0, "true": 1.0, "no": 0.0, "n": 0.0, "false": 0.0}


def render_calibrated(rows: list[dict]) -> str:
    """The calibrated table: per (metric, judge) with labels, the judge's plain mean, the PPI-corrected mean with its
    95% CI (or why there is none), and the judge's agreement with the labels."""
    from eval.calibration import calibration_note  # noqa: PLC0415 - lazy, as every command

    out = []
    for r in rows:
        a = r["agreement"]
        auroc = "-" if a["auroc"] is None else f"{a['auroc']:.3f} [{ci_text(*a['auroc_ci'])}]"
        acc = "-" if a["accuracy"] is None else f"{a['accuracy']:.3f} [{ci_text(*a['accuracy_ci'])}]"
        corrected = f"{r['mean']:.3f}" if r["status"] == "ok" else "unmeasured"
        out.append((r["metric"], r["judge"], r["n_labels"], r["judge_mean"], corrected,
                    ci_text(r["ci_low"], r["ci_high"]), auroc, acc, calibration_note(r)))
    return render(["metric", "judge", "labels", "judge mean", "PPI mean", "PPI 95% CI", "AUROC [95% CI]",
                   "accuracy@cut [95% CI]", "note"], out,
                  title="Calibrated by human labels (prediction-powered inference; labels.jsonl)")


def user_name() -> str:
    try:
        return getpass.getuser() or "cli"
    except (OSError, KeyError):  # no user name in the environment or the password database
        return "cli"


def parse_value(text: str) -> float:
    """'yes'/'no' (or 1/0), or a graded score within [0, 1]."""
    word = WORDS.get(text.strip().lower())
    if word is not None:
        return word
    try:
        v = float(text)
    except ValueError:
        raise UsageError(f"--value: '{text}' is not yes, no or a number within [0, 1]") from None
    if not 0.0 <= v <= 1.0:
        raise UsageError(f"--value: {text} must be within [0, 1] (0 = no, 1 = yes)")
    return v + 0.0  # -0 is 0


def cmd_label(args: argparse.Namespace) -> int:
    from corpora.labels import add_labels, checked_sample, make_label  # noqa: PLC0415

    run = Path(args.run)
    # the sample must be in the run; its hash as it is now: the label stops counting once its answer changes
    now = checked_sample(run, args.sample, field="sample")  # as corpora.labels.add_label checks it (the same code)
    try:
        label = make_label(args.sample, args.metric, parse_value(args.value), args.who, note=args.note,
                           sample_hash=now)
    except InputError as exc:
        if exc.path != LABEL_SOURCE or not exc.field:
            raise
        raise UsageError(f"--{OPTION_OF.get(exc.field, exc.field)}: {exc.message}") from None
    add_labels(run, [label])
    print(f"labelled {label.sample_id} {label.metric}={label.value:g} by {label.who} ({run / 'labels.jsonl'})")
    measured = measured_metrics(run)
    if measured and args.metric not in measured:
        warn(f"this run did not measure {args.metric} (it measured {', '.join(sorted(measured))}): the label is kept "
             f"and counts once the run is evaluated with it (--metrics ...,{args.metric})")
    return 0


def measured_metrics(run: Path) -> set[str]:
    """The metrics the run's evaluation measured (empty before any evaluation): its config.json says, no need to
    parse results.jsonl a second time (checked_sample did)."""
    from corpora.run_folder import RunFolder  # noqa: PLC0415

    metrics = (RunFolder(run).config() or {}).get("metrics")
    return {str(m) for m in metrics} if isinstance(metrics, list) else set()


def cmd_summary(args: argparse.Namespace) -> int:
    from corpora.labels import read_labels  # noqa: PLC0415
    from corpora.run_folder import RunFolder  # noqa: PLC0415
    from eval.calibration import calibrate, run_results, uncounted_labels  # noqa: PLC0415
    from eval.gate import load_summary  # noqa: PLC0415
    from ragdoctor.cmd_eval import render_eval_summary  # noqa: PLC0415

    run = Path(args.run)
    summary = load_summary(run)
    print(render_eval_summary(summary))
    folder = RunFolder(run if run.is_dir() else run.parent)
    stale: list = []
    results, labels = run_results(folder), read_labels(folder, stale=stale)  # read once: a bad line is reported once
    rows = calibrate(results, labels, stale=stale)
    if rows:
        print("\n" + render_calibrated(rows))
    keys = folder.current_keys()
    uncounted = uncounted_labels(results, labels, keys[1] if keys else (), stale)
    if uncounted:
        print(f"\n{sum(uncounted.values())} label(s) not counted: "
              + "; ".join(f"{n} {why}" for why, n in sorted(uncounted.items())))
    if not any(r["n_labels"] for r in rows):
        print(f"\nno human labels{' counted' if uncounted else ''} on this run's samples yet: label some in the "
              "dashboard's Label page (`ragdoctor dashboard RUN`) or with `ragdoctor label RUN --sample ID "
              "--metric M --value yes|no`")
    return 0


def register(sub: argparse._SubParsersAction, pipeline_options) -> None:  # noqa: ARG001 - no pipeline here
    p = sub.add_parser("label", help="add one human label to a run's labels.jsonl (scripted labelling)")
    p.add_argument("run", help="run folder")
    p.add_argument("--sample", required=True, help="the sample's id")
    p.add_argument("--metric", required=True, choices=LABEL_METRICS,
                   help="what is labelled (context_precision: are the retrieved chunks relevant?)")
    p.add_argument("--value", required=True, help="yes / no (1 / 0), or a graded score within [0, 1]")
    p.add_argument("--who", default=user_name(), help="who labelled it (default: your user name)")
    p.add_argument("--note", help="a free-text note kept with the label")
    p.set_defaults(func=cmd_label)

    p = sub.add_parser("summary", help="a run's means with CIs, and the PPI-corrected means its human labels give")
    p.add_argument("run", help="run folder (or its summary.json)")
    p.set_defaults(func=cmd_summary)
