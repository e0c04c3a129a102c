"""Judges: a Scorer family each (nli, lexical, embedding, llm) behind ScorerJudge, whole-metric judges (ragas), the
labels judge, and the registry that builds them by name."""
