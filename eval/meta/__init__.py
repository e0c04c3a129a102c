"""Meta-evaluation: judges measured against human labels (AUROC, balanced accuracy, Spearman, pairwise accuracy).

datasets  loaders for ARES, WiCE, HaluEval QA and a generic (evidence, text, label) JSONL, and the tasks they define
scoring   a Scorer turned into one continuous score per item (groundedness, context and answer relevance), batched
stats     the pure statistics: AUROC, dev-chosen thresholds, balanced accuracy, Spearman, bootstrap CIs, ECE
runner    judges x tasks -> results, flags against the lexical baseline, results.json + reliability plot
"""
