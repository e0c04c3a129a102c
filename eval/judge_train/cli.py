"""`ragdoctor judge train`: fine-tune the compact groundedness judge (see eval/judge_train/train.py).

Wire it with ``register(sub, pipeline_options)`` next to the other command modules in ragdoctor/cli.py."""
from __future__ import annotations

import json
import sys
from pathlib import Path


def _config_from_args(args):
    from eval.judge_train.train import TrainConfig

    if args.from_config:
        saved = json.loads(Path(args.from_config).read_text())
        recipe = saved.get("recipe")  # a training_config.json holds the TrainConfig under 'recipe'; a bare one is flat
        cfg = TrainConfig(**(recipe if isinstance(recipe, dict) else saved))
    else:
        cfg = TrainConfig()
    over: dict = {}
    for key in ("epochs", "max_examples", "seed", "batch_size", "lr", "max_length"):
        value = getattr(args, key)
        if value is not None:
            over[key] = value
    if args.no_combiner:
        over["combiner"] = False
    data = cfg.data.model_copy(update={"data_dir": args.data_dir} if args.data_dir else {})
    return cfg.model_copy(update={**over, "data": data})


def cmd_judge_train(args) -> int:
    from eval.judge_train.train import train

    cfg = _config_from_args(args)
    data_dir = Path(cfg.data.data_dir)
    if not data_dir.is_dir():
        print(f"ragdoctor: error: training pool not found: {data_dir} (pass --data-dir; see shared/data/README.md)",
              file=sys.stderr)
        return 2
    out = Path(args.out or Path("runs") / "judge" / cfg.recipe)
    summary = train(cfg, out, log=lambda msg: print(msg, flush=True))
    if not summary["export"]["ok"]:
        print(f"ragdoctor: error: exported weights differ from the trained model by {summary['export']['max_abs_diff']}",
              file=sys.stderr)
        return 1
    print(f"judge folder: {out} (use it with: ragdoctor eval ... --nli-model {out})")
    return 0


def register(sub, pipeline_options) -> None:  # noqa: ARG001 - same signature as the other command modules
    p = sub.add_parser("judge", help="train the project's own judges")
    judge_sub = p.add_subparsers(dest="judge_command", required=True)
    t = judge_sub.add_parser("train", help="fine-tune the compact groundedness (NLI) judge on the training pool")
    t.add_argument("--out", help="output folder (default runs/judge/<recipe>); replaced if it exists")
    t.add_argument("--data-dir", help="the training pool (default ../shared/data/train)")
    t.add_argument("--epochs", type=float, help="passes over the training examples (default 2)")
    t.add_argument("--max-examples", type=int, help="cap on training examples after balancing (default: all)")
    t.add_argument("--seed", type=int, help="seed for data sampling, initialisation and order (default 13)")
    t.add_argument("--batch-size", type=int, help="default 16")
    t.add_argument("--lr", type=float, help="peak learning rate (default 5e-5)")
    t.add_argument("--max-length", type=int, help="max tokens per (premise, claim) pair (default 128)")
    t.add_argument("--no-combiner", action="store_true", help="ship the bare cross-encoder, no combiner.json")
    t.add_argument("--from-config", help="repeat a run: its training_config.json (flags given here still win)")
    t.set_defaults(func=cmd_judge_train)
