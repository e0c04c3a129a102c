"""Planted trouble vs assigned diagnosis on a diagnosed run of the bundled question set: a confusion table of the
question kind (factoid, multi_doc, conflict, distractor, injection, unanswerable) against the primary category.

    .venv/bin/python bench/planted.py runs/demo [--out bench/results/planted.json]"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from corpora.bundled import bundled_questions  # noqa: E402
from corpora.run_folder import RunFolder  # noqa: E402
from ragdoctor.table import render  # noqa: E402


def confusion(run_dir: Path) -> dict[str, Counter]:
    kinds = {q.id: q.metadata.get("kind", "?") for q in bundled_questions()}
    table: dict[str, Counter] = {}
    for d in RunFolder(run_dir).diagnoses().values():
        table.setdefault(kinds.get(d.sample_id, "not bundled"), Counter())[d.category] += 1
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="a run folder that `ragdoctor diagnose` has written")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "planted.json"))
    args = ap.parse_args(argv)
    table = confusion(Path(args.run))
    if not table:
        print(f"bench/planted.py: no diagnoses in {args.run}: run `ragdoctor diagnose` first", file=sys.stderr)
        return 2
    cats = sorted({c for row in table.values() for c in row})
    rows = [(kind, *[row.get(c, 0) for c in cats], sum(row.values())) for kind, row in sorted(table.items())]
    print(render(["planted kind", *cats, "total"], rows, title=f"planted kind x assigned category ({args.run})"))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({k: dict(v) for k, v in table.items()}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
