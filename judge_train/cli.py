"""`ragdoctor judge train`: fine-tune the compact groundedness judge (see judge_train/train.py).

Wire it with ``register(sub, pipeline_options)`` next to the other command modules in ragdoctor/cli.py."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import ValidationError

from corpora.errors import UsageError
from corpora.paths import SHARED_DATA, output_file

POOL = str(SHARED_DATA / "train")  # the training pool (shared/data/README.md), found from the repository
REPLACED = "replaced if it exists and is one a judge command wrote"  # judge_train/out_folder.py checks it
HELDOUT = ("The combiners are fit on the calibration half of the pool's held-out slice: 10% of each source's groups, or "
           "the smallest held-out share (training_config.json's recipe.data.heldout_percent) of {stages}, if smaller, "
           "so that no stage trained on it; a stage that records none, or 0, is refused (exit 2) before --out is "
           "touched, and a model folder without a training_config.json is warned of (its share unknown). ")
SMALL_POOL = (HELDOUT.format(stages="the stages given") +
              "A pool too small for the combiners: when the calibration half of its held-out slice holds no support "
              "records of both labels the command is refused (exit 2) before --out is touched; without relevance "
              "pairs of both labels the folder has no relevance combiner (the bare relevance model is used), and with "
              "too few records per source to choose features by the combiner uses the cross-encoder alone, each said "
              "as a warning and recorded as 'unmeasured' with its reason in combiner.json, heldout_metrics.json and "
              "package.json.")
SMALL_POOL_REFIT = (HELDOUT.format(stages="the judge's recorded stages, the folds and --support") +
                    "When the calibration half of the pool's held-out slice holds no support records of both labels the "
                    "command is refused (exit 2) before --out is touched; with too few per source to choose features "
                    "by, the combiner uses the cross-encoder alone, said as a warning and recorded as 'unmeasured'.")


def _config_from_args(args):
    from judge_train.data import DataConfig
    from judge_train.train import TrainConfig, load_recipe

    cfg = load_recipe(args.from_config) if args.from_config else TrainConfig()
    over: dict = {}
    for key in ("epochs", "max_examples", "seed", "batch_size", "lr", "max_length"):
        value = getattr(args, key)
        if value is not None:
            over[key] = value
    data = cfg.data.model_dump()
    if args.data_dir:
        data["data_dir"] = args.data_dir
    elif data["data_dir"] == DataConfig.model_fields["data_dir"].default and not Path(data["data_dir"]).is_dir():
        data["data_dir"] = POOL  # the recipes' relative default, from outside the checkout's parent: the pool itself
    try:  # validated again: a flag's value meets the recipe's own limits (model_copy would take anything)
        return TrainConfig.model_validate({**cfg.model_dump(), **over, "data": data})
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        flag = f"--{key.replace('_', '-')}" if key in over else f"the recipe's {key}"
        raise UsageError(f"{flag}: {err['msg']}") from None


def cmd_judge_train(args) -> int:
    from judge_train.train import train

    cfg = _config_from_args(args)
    data_dir = Path(cfg.data.data_dir)
    if not data_dir.is_dir():
        print(f"ragdoctor: error: training pool not found: {data_dir} (pass --data-dir; see shared/data/README.md)",
              file=sys.stderr)
        return 2
    out = Path(args.out or Path("runs") / "judge" / cfg.recipe)
    if args.from_config:  # the recipe file is an input too: an --out holding it would delete it before it is read
        from judge_train.out_folder import replaceable_out

        replaceable_out(out, [args.from_config], what="stage folder")
        _say_data_changes(Path(args.from_config), cfg)
    summary = train(cfg, out, log=lambda msg: print(msg, flush=True))
    export = summary["export"]
    if export["status"] == "failed":
        print(f"ragdoctor: error: exported weights differ from the trained model by {export['max_abs_diff']}"
              f"{' (' + export['reason'] + ')' if export.get('reason') else ''}", file=sys.stderr)
        return 1
    if cfg.task == "rerank":
        print(f"reranker folder: {out} (use it with: retrieval.reranker = \"{out}\" and --rerank)")
    else:
        print(f"judge folder: {out} (use it with: ragdoctor eval ... --nli-model {out})")
    return 0


def _say_data_changes(config: Path, cfg) -> None:
    """Repeating a stage (its training_config.json) on a pool whose files are no longer those its data_manifest.json
    records: said on stderr before the run (it trains, but it is not the same run)."""
    from judge_train.manifest import data_changes

    manifest = config.parent / "data_manifest.json"
    if not manifest.is_file():
        return
    changes = data_changes(manifest, cfg.data)
    if changes:
        shown = "; ".join(changes[:5]) + (f"; and {len(changes) - 5} more" if len(changes) > 5 else "")
        print(f"ragdoctor: warning: the pool {cfg.data.data_dir} is not what {config.parent} was trained on "
              f"({manifest.name}): {shown}; this run will not repeat it", file=sys.stderr)


def _inputs_problem(stages: list[tuple[str | None, str]], data_dir: str, recorded: list[tuple[str | None, str]] = ()
                    ) -> str | None:
    """What is wrong with the stage folders given, as (folder, the task its recipe must record) pairs (None folders:
    options not given), and the training pool, if any; found before any work. ``recorded``: stages that must carry
    their recipe (what a fold or a replacement support model trained on is read from it: without it a fold would be
    taken to have seen no source and score every record)."""
    from judge_train.stage_files import stage_problem

    for folder, task, must_record in [*((f, t, False) for f, t in stages), *((f, t, True) for f, t in recorded)]:
        why = stage_problem(Path(folder), task=task, recorded=must_record) if folder else None
        if why:
            return why
    return None if Path(data_dir).is_dir() else f"training pool not found: {data_dir} (pass --data-dir DIR)"


def _refuse(problem: str | None) -> None:
    """A problem found before any work: a UsageError, which ragdoctor's main prints in one line with exit 2."""
    if problem:
        raise UsageError(problem)


def cmd_judge_combine(args) -> int:
    from judge_train.package import build

    data_dir = args.data_dir or POOL
    _refuse(_inputs_problem([(args.support, "support"), (args.relevance, "relevance"), (args.nli, "support")],
                            data_dir, [(f, "support") for f in args.cross_fit]))
    build(Path(args.support), Path(args.relevance) if args.relevance else None, Path(args.out), data_dir,
          per_label=args.per_label, seed=args.seed, log=lambda msg: print(msg, flush=True),
          nli=Path(args.nli) if args.nli else None, cross_fit=[Path(p) for p in args.cross_fit],
          max_features=args.max_features)
    print(f"judge folder: {args.out} (use it with: ragdoctor eval ... --nli-model {args.out})")
    return 0


def cmd_judge_refit(args) -> int:
    from judge_train.package import refit_support

    data_dir = args.data_dir or POOL
    judge = Path(args.judge)
    _refuse(_judge_problem(judge) or _inputs_problem([], data_dir, [(f, "support") for f in
                                                                    [*args.cross_fit, args.support]]))
    refit_support(judge, Path(args.out), data_dir, cross_fit=[Path(p) for p in args.cross_fit],
                  per_label=args.per_label, seed=args.seed, log=lambda msg: print(msg, flush=True),
                  support=Path(args.support) if args.support else None, max_features=args.max_features)
    print(f"judge folder: {args.out} (use it with: ragdoctor eval ... --nli-model {args.out})")
    return 0


def _max_features(p) -> None:
    p.add_argument("--max-features", type=int, metavar="K",
                   help="choose the support combiner's features among subsets of at most K beside the cross-encoder "
                        "(default: every subset; the 7 features beside it are 128 subsets, each fit once per source)")


def _judge_problem(judge: Path) -> str | None:
    if not ((judge / "combiner.json").is_file() and (judge / "package.json").is_file()):
        return f"not a judge folder made by 'ragdoctor judge combine' (no combiner.json and package.json): {judge}"
    from corpora.jsonl import read_json_object
    from judge_train.out_folder import unfinished
    from judge_train.stage_files import WEIGHTS, weights_problem

    if (why := unfinished(judge)) is not None:
        return why
    read_json_object(judge / "package.json")  # InputError naming it when damaged
    spec = read_json_object(judge / "combiner.json").get("support")
    if not isinstance(spec, dict) or not spec.get("features"):
        return f"{judge / 'combiner.json'}: field 'support': no support combiner to refit or report"
    for model in ("support", "relevance", "nli"):
        why = weights_problem(judge / model / WEIGHTS) if (judge / model).is_dir() else None
        if why:
            return f"{judge / model / WEIGHTS}: {why}"
    return None


def cmd_judge_interpolate(args) -> int:
    from judge_train.interpolate import interpolate
    from judge_train.stage_files import stage_recipe

    record = interpolate(Path(args.base), Path(args.tuned), args.weight, Path(args.out))  # UsageError: main's exit 2
    use = (f"ragdoctor judge refit JUDGE --support {args.out} ..." if stage_recipe(Path(args.out)).get("task") == "support"
           else f"ragdoctor judge combine --support DIR --relevance {args.out} ...")
    print(f"stage folder: {args.out} ({1 - record['weight']:g} x {args.base} + {record['weight']:g} x {args.tuned}; "
          f"use it with: {use})")
    return 0


def cmd_judge_crossfit_report(args) -> int:
    from judge_train.crossfit import cross_fitted_report, report_notes, report_table

    data_dir = args.data_dir or POOL
    judge = Path(args.judge)
    _refuse(_judge_problem(judge) or _inputs_problem([], data_dir, [(f, "support") for f in args.cross_fit]))
    # checked before minutes of scoring; only an earlier report of this kind is replaced
    json_out = output_file(args.json, what="cross-fitted report", signature='"combiner_features"') if args.json else None
    from judge_train.package import report_share
    from judge_train.suite import HELDOUT_PERCENT

    percent = report_share([judge, *args.cross_fit], HELDOUT_PERCENT)  # no judge scored on records it trained on
    report = cross_fitted_report(judge, [Path(p) for p in args.cross_fit], data_dir, per_label=args.per_label,
                                 seed=args.seed, percent=percent,
                                 log=lambda msg: print(msg, file=sys.stderr, flush=True))
    print("\n".join(report_table(report) + report_notes(report)))
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {json_out}")
    return 0


def register(sub, pipeline_options) -> None:  # noqa: ARG001 - same signature as the other command modules
    p = sub.add_parser("judge", help="train the project's own judges")
    judge_sub = p.add_subparsers(dest="judge_command", required=True)
    t = judge_sub.add_parser("train", help="fine-tune the compact groundedness (NLI) judge, or the retrieval reranker (recipes/reranker-stage.json), on the training pool")
    t.add_argument("--out", help=f"output folder (default runs/judge/<recipe>); {REPLACED}")
    t.add_argument("--data-dir", help="the training pool (default shared/data/train beside the checkout)")
    t.add_argument("--epochs", type=float, help="passes over the training examples (default 2)")
    t.add_argument("--max-examples", type=int, help="cap on training examples after balancing (default: all)")
    t.add_argument("--seed", type=int, help="seed for data sampling, initialisation and order (default 13)")
    t.add_argument("--batch-size", type=int, help="default 16")
    t.add_argument("--lr", type=float, help="peak learning rate (default 5e-5)")
    t.add_argument("--max-length", type=int, help="max tokens per (premise, claim) pair (default 128)")
    t.add_argument("--from-config", help="repeat a run: its training_config.json (flags given here still win)")
    t.set_defaults(func=cmd_judge_train)
    c = judge_sub.add_parser("combine", help="assemble a judge folder from trained stages: fit the combiners on "
                                             "held-out slices of the pool, choosing features by the worst source",
                             description=SMALL_POOL)
    c.add_argument("--support", required=True, help="the support stage's folder (ragdoctor judge train --task support)")
    c.add_argument("--relevance", help="the relevance stage's folder (optional)")
    c.add_argument("--nli", help="a general-NLI stage's folder (optional): its score is offered to the support "
                                 "combiner as one more feature, nli_max")
    c.add_argument("--cross-fit", nargs="+", default=[], metavar="DIR",
                   help="support stages each trained without some sources (recipes/support-fold-*.json): the support "
                        "combiner is fit on features from a model that never saw each record's source")
    c.add_argument("--out", required=True, help=f"the judge folder to write ({REPLACED})")
    c.add_argument("--data-dir", help="the training pool (default shared/data/train beside the checkout)")
    c.add_argument("--per-label", type=int, default=120, help="held-out records per label per source (default 120)")
    c.add_argument("--seed", type=int, default=13)
    _max_features(c)
    c.set_defaults(func=cmd_judge_combine)
    r = judge_sub.add_parser("refit", help="copy a judge folder and fit its support combiner again (--cross-fit: on "
                                           "scores from models that never saw each held-out record's source)",
                             description=SMALL_POOL_REFIT)
    r.add_argument("judge", help="the judge folder (support/, relevance/, combiner.json)")
    r.add_argument("--cross-fit", nargs="+", default=[], metavar="DIR",
                   help="support stages each trained without some sources (recipes/support-fold-*.json)")
    r.add_argument("--out", required=True, help=f"the judge folder to write ({REPLACED})")
    r.add_argument("--data-dir", help="the training pool (default shared/data/train beside the checkout)")
    r.add_argument("--per-label", type=int, default=120, help="held-out records per label per source (default 120)")
    r.add_argument("--seed", type=int, default=13)
    r.add_argument("--support", metavar="DIR", help="a stage folder whose cross-encoder replaces the judge's support "
                                                    "model (e.g. from 'judge interpolate')")
    _max_features(r)
    r.set_defaults(func=cmd_judge_refit)
    w = judge_sub.add_parser("interpolate", help="mix the weights of a tuned stage and the stage it started from: "
                                                 "(1 - a) base + a tuned (WiSE-FT), a new stage folder")
    w.add_argument("base", help="the stage the tuned one started from (e.g. the general-NLI stage)")
    w.add_argument("tuned", help="the fine-tuned stage (or a judge folder's support/)")
    w.add_argument("--weight", type=float, required=True, help="a: the tuned model's share, 0..1")
    w.add_argument("--out", required=True, help=f"the stage folder to write ({REPLACED})")
    w.set_defaults(func=cmd_judge_interpolate)
    x = judge_sub.add_parser("crossfit-report", help="a judge's support combiner on sources its cross-encoder never "
                                                     "saw: the pool's report half, each record scored by a fold model "
                                                     "that never trained on its source, next to lexical",
                             description="A pool whose report half holds no source with records of both labels is "
                                         "refused (exit 2, nothing to measure); a value it cannot measure is "
                                         "'unmeasured', its reason printed under the table and kept in --json.")
    x.add_argument("judge", help="the judge folder")
    x.add_argument("--cross-fit", nargs="+", required=True, metavar="DIR",
                   help="support stages each trained without some sources (recipes/support-fold-*.json)")
    x.add_argument("--json", help="also write the report here")
    x.add_argument("--data-dir", help="the training pool (default shared/data/train beside the checkout)")
    x.add_argument("--per-label", type=int, default=150, help="records per label per source (default 150, as "
                                                             "meta-eval --dataset pool)")
    x.add_argument("--seed", type=int, default=0)
    x.set_defaults(func=cmd_judge_crossfit_report)
