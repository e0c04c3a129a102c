"""The LLM judge on our own claims: an LLM answers short verification questions per (premise, claim) and
per (question, passage), and ``ScorerJudge`` turns those verdicts into every metric a model computes.

A verdict the model cannot be made to give (unparseable twice, or the call failed) is *undecided*: the
scorer returns ``Support(nan)`` / ``nan`` for it, and ``LLMJudge`` makes every trace whose value rests on an
undecided ask (the metric declares its asks: eval.metrics.base.Ask) ``unmeasured`` ("judge output unparseable", or the
call's one-line error), while the rest of the batch keeps its values. A claim some other premise supports does not
depend on it."""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpora.records import MetricResult, Trace
from eval.claims import premise_windows
from eval.judge_cache import cached
from eval.judges.base import Support
from eval.judges.scorer import ScorerJudge
from eval.metrics import get
from eval.metrics.base import Ask
from eval.metrics.verify import top_premises
from rag.fleet import redact_urls
from rag.llm import ChatLLM, LLMError, one_line

UNPARSEABLE = "judge output unparseable"
NAN = float("nan")

# Two support prompts. Yes/no is the default: the bundled 0.5B model answers it well but answers the 3-way
# question NOT_SUPPORTED whatever the pair (measured), and cannot tell contradiction from absence either way.
_YESNO_SYSTEM = "Answer with YES or NO only."
_YESNO_USER = ("Premise: {premise}\nStatement: {hypothesis}\n"
               "Is the statement true according to the premise? Answer YES or NO.")
_YESNO_RETRY = "Reply with exactly one word: YES or NO."
_3WAY_SYSTEM = "You verify facts. Reply with one word: SUPPORTED, CONTRADICTED or NOT_SUPPORTED."
_3WAY_USER = ("Premise: {premise}\n\nStatement: {hypothesis}\n\n"
              "Does the premise support the statement? Reply SUPPORTED, CONTRADICTED or NOT_SUPPORTED.")
_3WAY_RETRY = "Reply with exactly one word: SUPPORTED, CONTRADICTED or NOT_SUPPORTED."
_REL_SYSTEM = "You judge relevance. Reply with one word: YES or NO."
_REL_USER = ("Question: {question}\n\nPassage: {passage}\n\n"
             "Does the passage contain information that helps answer the question? Reply YES or NO.")
_REL_RETRY = _YESNO_RETRY

_SUPPORT_WORDS = re.compile(r"not[\s_-]*supported|unsupported|not[\s_-]*enough|not[\s_-]*mentioned|insufficient"
                            r"|neutral|unclear|unknown"
                            r"|contradict\w*|refute\w*|supported|supports|entail\w*|yes|no|true|false", re.I)
_REL_WORDS = re.compile(r"not[\s_-]*relevant|irrelevant|unrelated|relevant|helpful|yes|no", re.I)


def parse_support(text: str) -> Support | None:
    """The first verdict keyword in ``text`` (case-insensitive), as a Support; None when there is none."""
    m = _SUPPORT_WORDS.search(text)
    if m is None:
        return None
    word = re.sub(r"[\s_-]+", "_", m.group(0).lower())
    if word in ("supported", "supports", "yes", "true") or word.startswith("entail"):
        return Support(1.0, 0.0)
    if word.startswith(("contradict", "refute")) or word == "false":
        return Support(0.0, 1.0)
    return Support(0.0, 0.0)


def parse_relevance(text: str) -> float | None:
    m = _REL_WORDS.search(text)
    if m is None:
        return None
    return 1.0 if m.group(0).lower() in ("relevant", "helpful", "yes") else 0.0


@dataclass
class LLMScorer:
    """A Scorer asking a chat model; ``failures`` maps each undecided pair of the last calls to its reason.

    ``three_way`` asks SUPPORTED / CONTRADICTED / NOT_SUPPORTED (for capable models); the default yes/no
    question gives ``contradicted=None``."""

    llm: ChatLLM
    max_tokens: int = 12
    seed: int = 0
    name: str = "llm"
    family: str = "llm"
    support_threshold: float = 0.5
    relevance_threshold: float = 0.5
    max_consecutive_errors: int = 3
    three_way: bool = False
    concurrency: int = 1  # asks in flight at once (a fleet or a server with parallel slots)
    failures: dict[tuple[str, str], str] = field(default_factory=dict)

    def support(self, pairs: list[tuple[str, str]]) -> list[Support]:
        prompts = ((_3WAY_SYSTEM, _3WAY_USER, _3WAY_RETRY) if self.three_way else
                   (_YESNO_SYSTEM, _YESNO_USER, _YESNO_RETRY))
        verdicts = self._ask(pairs, *prompts, parse_support, ("premise", "hypothesis"))
        if not self.three_way:  # yes/no cannot tell contradiction from absence
            verdicts = [v if v is None else Support(v.supported, None) for v in verdicts]
        return [Support(NAN, None) if v is None else v for v in verdicts]

    def relevance(self, pairs: list[tuple[str, str]]) -> list[float]:
        verdicts = self._ask(pairs, _REL_SYSTEM, _REL_USER, _REL_RETRY, parse_relevance, ("question", "passage"))
        return [NAN if v is None else v for v in verdicts]

    def _ask(self, pairs: list[tuple[str, str]], system: str, user: str, retry: str,
             parse: Callable[[str], Any], names: tuple[str, str]) -> list[Any]:
        """One verdict per pair (None when undecided, reason in ``failures``), one ask per distinct pair."""
        answers: dict[tuple[str, str], Any] = {}
        errors, last_error = 0, ""
        distinct = list(dict.fromkeys(pairs))

        def ask(pair: tuple[str, str]) -> tuple[Any, str | None]:
            messages = [{"role": "system", "content": system},
                        {"role": "user", "content": user.format(**dict(zip(names, pair)))}]
            try:
                return self._verdict(messages, retry, parse), None
            except LLMError as exc:
                return None, f"judge call failed: {one_line(exc, 200)}"

        wave = max(1, self.concurrency)  # ``wave`` asks at once; 1: one after the other, as always
        pool = ThreadPoolExecutor(max_workers=wave, thread_name_prefix="llm-judge") if wave > 1 else None
        try:
            for start in range(0, len(distinct), wave):
                batch = distinct[start : start + wave]
                if errors >= self.max_consecutive_errors:  # the model is down: do not wait on every pair
                    for pair in batch:
                        answers[pair], self.failures[pair] = None, last_error
                    continue
                for pair, (verdict, error) in zip(batch, pool.map(ask, batch) if pool else map(ask, batch)):
                    answers[pair] = verdict
                    if error is None:
                        errors = 0
                    else:
                        errors, last_error = errors + 1, error
                    if verdict is None:
                        self.failures[pair] = error or UNPARSEABLE
        finally:
            if pool:
                pool.shutdown(wait=True)
        return [answers[p] for p in pairs]

    def _verdict(self, messages: list[dict[str, str]], retry: str, parse: Callable[[str], Any]) -> Any:
        reply = self._chat(messages)
        verdict = parse(reply)
        if verdict is None:  # once more, with a stricter reminder
            verdict = parse(self._chat([*messages, {"role": "assistant", "content": reply},
                                        {"role": "user", "content": retry}]))
        return verdict

    def _chat(self, messages: list[dict[str, str]]) -> str:
        return self.llm.chat(messages, temperature=0.0, max_tokens=self.max_tokens, seed=self.seed).text


class LLMJudge(ScorerJudge):
    """ScorerJudge over an LLMScorer whose undecided verdicts make the affected samples unmeasured.

    ``llm`` is put behind the disk cache (``cache``: True = default path, a path, or False). Its name (``config_id``)
    is the model's id: a fleet's servers as a sorted set (rag.llm.fleet_name), a URL without its password."""

    def __init__(self, llm: ChatLLM, *, cache: bool | str | Path = True, max_premises: int = 3,
                 max_tokens: int = 12, seed: int = 0, three_way: bool = False, concurrency: int = 1):
        self.llm_scorer = LLMScorer(cached(llm, cache), max_tokens=max_tokens, seed=seed, three_way=three_way,
                                    concurrency=concurrency)
        super().__init__(_Decided(self.llm_scorer), max_premises=max_premises,
                         config_id=f"llm:{redact_urls(self.llm_scorer.llm.model_id)}")

    def judge(self, metric: str, traces: list[Trace]) -> list[MetricResult]:
        self.llm_scorer.failures.clear()
        results = super().judge(metric, traces)
        failures = dict(self.llm_scorer.failures)
        if not failures:
            return results
        asks = get(metric).asks
        return [self._check(r, asks(t, r) if r.status == "ok" else [], failures) for t, r in zip(traces, results)]

    def _check(self, r: MetricResult, asks: list[Ask], failures: dict) -> MetricResult:
        """Unmeasured when an ask the value rests on was undecided (each such claim's verdict is marked)."""
        reasons = []
        for a in asks:
            why = self._undecided(a.claim, list(a.texts), failures, a.lead) if a.claim else \
                failures.get((a.question, a.passage))
            if why and a.mark is not None:
                a.mark["verdict"] = "undecided"
            reasons.append(why)
        reason = next((x for x in reasons if x), None)
        return r if reason is None else MetricResult.unmeasured(r.metric, self.name, reason, **r.evidence)

    def _undecided(self, claim: str, texts: list[str], failures: dict, lead: str = "") -> str | None:
        """The failure reason of any premise that ScorerJudge.verify scored for ``claim`` over ``texts`` (each window
        led by ``lead``, as verify builds them)."""
        windows = [w for t in texts for w in premise_windows(t, lead)]
        for i in top_premises(claim, windows, self.max_premises):
            if (windows[i], claim) in failures:
                return failures[(windows[i], claim)]
        return None


@dataclass
class _Decided:
    """What ScorerJudge sees: undecided (NaN) verdicts as 0 so its max/threshold logic stays well-defined;
    LLMJudge then turns the samples that depended on them into unmeasured results."""

    inner: LLMScorer

    def __getattr__(self, name: str):
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def support(self, pairs: list[tuple[str, str]]) -> list[Support]:
        return [Support(0.0, None) if math.isnan(s.supported) else s for s in self.inner.support(pairs)]

    def relevance(self, pairs: list[tuple[str, str]]) -> list[float]:
        return [0.0 if math.isnan(v) else v for v in self.inner.relevance(pairs)]
