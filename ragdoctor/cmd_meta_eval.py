"""`ragdoctor meta-eval`: score judges against human-labelled data (AUROC, balanced accuracy, Spearman, pairwise
accuracy, each with a bootstrap 95% CI), print a table or JSON, and save results.json, scores.jsonl and a
reliability plot. Run it on your own labelled JSONL to calibrate the judges to your domain."""
from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from pathlib import Path

from corpora.errors import InputError, UsageError, report_skipped
from corpora.jsonl import json_object_problem
from corpora.paths import SHARED_DATA, output_folder, refuse_symlink_loop, write_report
from eval.judges.registry import JUDGES, JudgeOptions, check_nli_model, default_nli_path
from eval.meta.datasets import DATASETS, DEFAULT_FILES, TASK_METRICS, default_path, load_records
from eval.meta.scoring import REDUCERS
from rag.models import DEFAULT_GGUF
from ragdoctor.options import JUDGE_MAX_CHARS_HELP
from ragdoctor.table import ci_text, render

DATA_ROOT = SHARED_DATA
POOL = "pool"  # the held-out slices of the judge training pool, one task per source (judge_train/suite.py)
HEADERS = ["metric", "judge", "n", "AUROC", "95% CI", "bal.acc", "95% CI", "thr", "spearman", "95% CI",
           "pairwise", "95% CI", "vs lexical (paired 95% CI)", "ECE", "sec", "pairs/s", "cut", "flags"]


def resolve_path(dataset: str, path: str | None) -> Path:
    if path:
        return Path(path)
    if dataset == POOL:
        found = DATA_ROOT / "train"
        if not found.is_dir():
            raise InputError(found, "training pool not found (pass --path DIR)")
        return found
    default = default_path(dataset, DATA_ROOT)
    if default is None:
        raise InputError(None, f"--dataset {dataset} needs --path FILE", field="path")
    if not default.exists():
        raise InputError(default, "file not found (pass --path FILE)")
    return default


def default_judges(nli_model: str | None) -> list[str]:
    return ["lexical", "embedding"] + (["nli"] if nli_model or default_nli_path() else [])


def nli_variants(folders: list[str] | None) -> dict[str, str]:
    """--compare-nli folders as judges labelled 'nli:<folder name>' (a repeated name gets '#2', '#3', ...)."""
    out: dict[str, str] = {}
    for folder in folders or []:
        label = base = f"nli:{Path(folder).name or folder}"
        k = 2
        while label in out:
            label, k = f"{base}#{k}", k + 1
        out[label] = folder
    return out


def _ci(ci) -> str:
    return ci_text(*(ci or (None, None)))


def _num(x: float | None, digits: int) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def result_row(r: dict) -> tuple:
    if "error" in r:
        return (r["metric"], r["judge"], "-", *["-"] * 14, f"error: {r['error']}")
    n = r["n"] if r.get("n_graded") is None else f"{r['n']}/{r['n_graded']}"
    return (r["metric"], r["judge"], n, r.get("auroc"), _ci(r.get("auroc_ci")), r.get("balanced_accuracy"),
            _ci(r.get("balanced_accuracy_ci")), r.get("threshold"), r.get("spearman"), _ci(r.get("spearman_ci")),
            r.get("pairwise_accuracy"), _ci(r.get("pairwise_accuracy_ci")), _versus(r.get("vs_lexical")), r.get("ece"),
            _num(r.get("seconds"), 2), _speed(r), _share(r.get("truncated_share")),
            "; ".join(f for f in r.get("flags", []) if "lexical (" not in f) or "")


def _versus(cmp: dict | None) -> str:
    """'beats +0.052 (+0.010..+0.094)': the paired difference against lexical on the same items."""
    if not cmp or cmp.get("difference") is None:
        return "-"
    lo, hi = cmp["ci"]
    ci = "" if lo is None else f" ({lo:+.3f}..{hi:+.3f})"
    return f"{cmp['verdict'] or '?'} {cmp['difference']:+.3f}{ci}"


COLUMNS = {"auroc": "AUROC", "auroc_ci": "AUROC CI", "balanced_accuracy": "bal.acc",
           "balanced_accuracy_ci": "bal.acc CI", "threshold": "thr", "spearman": "spearman",
           "spearman_ci": "spearman CI", "pairwise_accuracy": "pairwise", "pairwise_accuracy_ci": "pairwise CI",
           "ece": "ECE", "vs_lexical": "vs lexical"}  # results.json's field -> the table's column


def missing_cells(r: dict) -> list[tuple[str, str]]:
    """(column, reason) for each cell of the row shown '-' (or '?' for a verdict) whose statistic applies but could
    not be measured: the reasons results.json carries (why_none, vs_lexical.reason, truncated_reason)."""
    if "error" in r:
        return []
    out = [(COLUMNS[k], why) for k, why in (r.get("why_none") or {}).items() if k in COLUMNS]
    cmp = r.get("vs_lexical")
    if cmp and cmp.get("verdict") is None and cmp.get("reason"):
        out.append(("vs lexical", cmp["reason"]))
    if r.get("truncated_reason"):
        out.append(("cut", r["truncated_reason"]))
    return out


def footnotes(results: list[dict]) -> list[str]:
    """One line per reason under the table, naming the rows and cells it explains: a '-' or '?' never goes without a
    word in the table itself (not only in results.json)."""
    by_reason: dict[str, list[str]] = {}
    for r in results:
        cells: dict[str, list[str]] = {}
        for column, why in missing_cells(r):
            cells.setdefault(why, []).append(column)
        for why, columns in cells.items():
            by_reason.setdefault(why, []).append(f"{r['metric']} {r['judge']}: {', '.join(columns)}")
    by_note: dict[str, list[str]] = {}
    for r in results:
        notes = dict(r.get("ci_notes") or {})
        if (r.get("vs_lexical") or {}).get("note"):  # the paired difference's Wilson interval, said as the others are
            notes["vs_lexical"] = r["vs_lexical"]["note"]
        for key, note in notes.items():
            by_note.setdefault(note, []).append(f"{r['metric']} {r['judge']}: {COLUMNS.get(key, key)}")
    out = ["not measured ('-', or '?' for no verdict):"] + [f"  {'; '.join(rows)}: {why}"
                                                           for why, rows in by_reason.items()] if by_reason else []
    return out + (["CIs that are no bootstrap's (every resample gave one value):"] +
                  [f"  {'; '.join(rows)}: {note}" for note, rows in by_note.items()] if by_note else [])


def _share(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _speed(r: dict) -> str:
    """pairs/s for Scorer judges; whole-metric judges (ragas) are counted in samples/s."""
    if r.get("samples_per_second") is not None:
        return f"{r['samples_per_second']:.3f} samples/s"
    return _num(r.get("pairs_per_second"), 1)


def render_report(report: dict) -> str:
    lines = [render(HEADERS, [result_row(r) for r in report["results"]],
                    title=f"meta-eval {report['dataset']}: {report['path']} (claims reduced by {report['reduce']})")]
    lines += footnotes(report["results"])
    sample = report.get("sample")
    if sample:
        lines.append(f"seeded subsample: {sample['n']} of {sample['of']} records (seed {sample['seed']})")
    lines.append("AUROC and ECE over all binary-labelled records; bal.acc on the test split at the threshold (thr) "
                 "chosen on the dev split (split by group: a group's rows on one side); n = binary/graded records "
                 "where graded; CIs resample whole groups (rows sharing a source document); vs lexical: the "
                 "headline statistic minus lexical's on the same items, 'beats' only when its CI lies above 0; no "
                 "CI where every resample gives the same value (zero width); "
                 "cut: share of the (premise, claim) or (passage window, question) inputs the model reads that are "
                 "longer than it reads ('-' where the judge does not count them)")
    lines += [f"judge {j['judge']}: {j['config_id']} (loaded in {j['load_seconds']:.1f} s)" for j in report["judges"]]
    lines += [f"unavailable: {u['judge']}: {u['reason']}" for u in report["unavailable"]]
    worst = report.get("worst_source") or {}
    if worst:
        lines.append(render(["metric", "judge", "worst source", "its score"],
                            [(w["metric"], w["judge"], w.get("source", "-"), w["min"]) for w in worst.values()],
                            title="worst source per judge (pick by this, not by the average)"))
    if report.get("input_errors"):
        lines.append(f"{len(report['input_errors'])} bad line(s) skipped (listed in input_errors.txt)")
    files = report.get("files")
    if files:
        lines.append(f"wrote {files['results']}, {files['scores']}, {files['reliability']}")
    return "\n".join(lines)


WRITES = ("results.json", "scores.jsonl", "reliability.png", "input_errors.txt")  # what a report folder holds


def meta_eval_folder(out: Path, source: Path) -> Path:
    """``--out``: absent, empty, or an earlier report's folder, known by its results.json's content (a user's own
    results.json or scores.jsonl is never replaced), and never the folder whose files would overwrite the input. A
    symbolic link loop is refused here, before the judges run (writing into it would fail only at the end)."""
    refuse_symlink_loop(out)
    out = output_folder(out, markers=("results.json",), what="meta-eval folder")
    report = out / "results.json"
    if report.exists():
        body, _ = json_object_problem(report)
        if not (body is not None and {"dataset", "results"} <= set(body)):
            raise InputError(report, "is not a meta-eval report: refusing to replace it (choose another --out)")
    for name in WRITES:
        if (out / name).exists() and source.exists() and (out / name).resolve() == source.resolve():
            raise UsageError(f"--out {out}: its {name} is the input file (--path): choose another --out")
    return out


def cmd_meta_eval(args) -> int:
    from eval.meta.meta_eval import MetaEvalOptions, default_out_dir, run_meta_eval, save_report  # noqa: PLC0415 - scipy
    from ragdoctor.flow import llm_factory, unused_judge_options  # noqa: PLC0415 - lazy: see cmd_eval

    variants = nli_variants(args.compare_nli)
    judges = list(dict.fromkeys([*(args.judges or default_judges(args.nli_model)), *variants]))  # each judge once
    unused_judge_options({name: getattr(args, name) for name in ("nli_model", "judge_base_url", "judge_model",
                                                                 "judge_max_chars")},
                         judges, label=lambda name: "--" + name.replace("_", "-"))
    path = resolve_path(args.dataset, args.path)
    out_dir = meta_eval_folder(Path(args.out) if args.out else default_out_dir(args.dataset), path)
    for flag, folder in [("--nli-model", args.nli_model), *(("--compare-nli", f) for f in args.compare_nli or [])]:
        check_nli_model(folder, flag, load=True)  # refused now, not reported after the other judges ran
    errors: list = []
    records = None
    if args.dataset != POOL:  # bad lines are reported and skipped, as eval does; none valid: exit 2
        records = load_records(args.dataset, path, errors)  # read once: --path may be a pipe
    for e in errors:
        report_skipped(e)
    with ExitStack() as stack:
        judge_opts = JudgeOptions(nli_model=args.nli_model, llm_max_chars=args.judge_max_chars,
                                  llm_factory=llm_factory(stack, args.judge_base_url,
                                                          args.judge_model or DEFAULT_GGUF))
        opts = MetaEvalOptions(judges=judges, limit=args.limit, nli_variants=variants,
                               metrics=args.metrics, seed=args.seed, n_resamples=args.resamples, reduce=args.reduce,
                               chunk_size=args.batch_size, judge_options=judge_opts)
        log = (lambda msg: print(f"ragdoctor: meta-eval: {msg}", file=sys.stderr)) if args.format == "table" else None
        if args.dataset == POOL:
            from eval.judges.registry import default_nli_path  # noqa: PLC0415
            from eval.meta.meta_eval import run_tasks  # noqa: PLC0415 - lazy: see above
            from judge_train.package import report_share  # noqa: PLC0415 - lazy: the training tool, for this dataset
            from judge_train.suite import HELDOUT_PERCENT, pool_tasks  # noqa: PLC0415

            # the held-out slice no nli judge trained on: no larger than the smallest share its stages held out
            nli = [f for f in (args.nli_model or default_nli_path(), *(args.compare_nli or [])) if f] \
                if any(j.startswith("nli") for j in judges) or args.compare_nli else []
            percent = report_share(nli, HELDOUT_PERCENT)
            tasks, total = pool_tasks(path, per_label=args.limit or 150, seed=args.seed, percent=percent)
            opts.limit = None  # --limit sized each source above, it is not a subsample of the tasks
            report = run_tasks(POOL, str(path), tasks, total, opts, log=log)
            report["sample"] = None
        else:
            report = run_meta_eval(args.dataset, path, opts, log=log, records=records)
    report["input_errors"] = [str(e) for e in errors]
    report["files"] = save_report(report, out_dir)
    write_report(out_dir / "input_errors.txt", "".join(f"{e}\n" for e in errors))
    if args.format == "json":
        print(json.dumps({k: v for k, v in report.items() if k != "scores"}, indent=2, default=float))
    else:
        print(render_report(report))
    if not any("error" not in r for r in report["results"]):
        why = "; ".join(f"{u['judge']}: {u['reason']}" for u in report["unavailable"]) or "every judge failed"
        print(f"ragdoctor: error: nothing was measured ({why}); the report is saved in {out_dir}", file=sys.stderr)
        return 2
    if all(r.get("unmeasured") for r in report["results"] if "error" not in r):  # the data gives nothing to measure
        why = "; ".join(dict.fromkeys(r["unmeasured"] for r in report["results"] if r.get("unmeasured")))
        print(f"ragdoctor: error: nothing could be measured on {path} ({why}); the report is saved in {out_dir}",
              file=sys.stderr)
        return 2
    return 0


def register(sub, pipeline_options) -> None:  # noqa: ARG001 (no pipeline options: meta-eval runs no pipeline)
    p = sub.add_parser("meta-eval", help="score judges against human-labelled data (AUROC, balanced accuracy, ...)")
    p.add_argument("--dataset", required=True, choices=[*DATASETS, POOL],
                   help="ares, wice, halueval (public formats), jsonl: {evidence, text, label[, group]} per line, or "
                        "pool: the held-out slices of the judge training pool, one task per source (--limit N: N "
                        "records per label per source, default 150)")
    p.add_argument("--path", help="the labelled file (default: ../shared/data/" +
                   ", ".join(f"{v}" for v in DEFAULT_FILES.values()) + " beside the repo)")
    p.add_argument("--judge", action="append", dest="judges", choices=list(JUDGES),
                   help="repeatable (default: lexical, embedding, and nli when a model is available)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument("--out", help="output folder (default runs/meta-eval/<dataset>)")
    p.add_argument("--limit", "--sample", dest="limit", type=int, metavar="N",
                   help="seeded random subsample of N records (N >= 1)")
    p.add_argument("--metric", action="append", dest="metrics", choices=TASK_METRICS,
                   help="repeatable: only these of the set's tasks (default: all; slow judges: pick one)")
    p.add_argument("--seed", type=int, default=0, help="seed of the subsample, the dev/test split and the bootstrap")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for the 95%% CIs")
    p.add_argument("--reduce", choices=REDUCERS, default="min", help="claims to one groundedness score")
    p.add_argument("--batch-size", type=int, default=64, help="records per scorer batch")
    p.add_argument("--nli-model", help="CrossEncoder folder for the nli judge (default: the shipped judge, if any)")
    p.add_argument("--compare-nli", action="append", metavar="DIR",
                   help="repeatable: one more nli judge from this folder (a judge folder or any CrossEncoder), "
                        "measured in the same table as 'nli:<folder name>', e.g. the previous judge beside the "
                        "shipped one")
    p.add_argument("--judge-base-url", help="OpenAI-compatible URL for the llm judge (default: bundled model)")
    p.add_argument("--judge-model", help=f"llm judge model: bundled GGUF or server model (default {DEFAULT_GGUF})")
    p.add_argument("--judge-max-chars", type=int, metavar="N", help=JUDGE_MAX_CHARS_HELP)
    p.set_defaults(func=cmd_meta_eval)
