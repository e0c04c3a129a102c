"""Deterministic detectors (no model, microseconds): jailbreak / prompt-injection phrasing in a user question, and
instructions aimed at the model inside a retrieved chunk. Each pattern has a name so a verdict names its evidence.

Patterns look for *directives* ("ignore your previous instructions", "reply only with", "you are now"), not for
topic words: a question about system prompts or WGMMA instructions is not an attack."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_I = re.IGNORECASE


def _any(*alternatives: str) -> re.Pattern:
    return re.compile("|".join(alternatives), _I)


_OVERRIDE_VERB = r"(?:ignore|disregard|forget|override|bypass)"
_PRIOR = r"(?:all|any|the|your|my|these|those|previous|prior|above|earlier|preceding|former|original|existing|safety)"
_TARGET = (r"(?:instructions?|prompts?|rules|guidelines|directions|directives|guardrails|restrictions|policies|"
           r"context|system message)")
_SECRET = (r"(?:your|the)\s+(?:full\s+|entire\s+|complete\s+|original\s+|initial\s+|hidden\s+|secret\s+|exact\s+)*"
           r"(?:system\s+prompt|system\s+message|instructions|prompt you (?:received|were given)|hidden instructions|"
           r"rules)")
_ASK = r"\b(?:reveal|print|show|output|repeat|display|leak|dump|tell me|give me|what(?:'s| is| are| were))\b"
_MODEL = r"(?:AI|LLM|language model|assistant|chatbot)"

# Shared by questions and chunks: direct attempts to replace the model's instructions or extract them.
_COMMON: list[tuple[str, re.Pattern]] = [
    ("override_instructions", _any(rf"\b{_OVERRIDE_VERB}\b(?:\s+{_PRIOR}\b){{1,3}}(?:\s+\w+){{0,2}}\s+{_TARGET}\b")),
    ("forget_everything", _any(r"\bforget\s+(?:everything|all)\b(?:\s+(?:you|that|above|before))?")),
    ("reveal_prompt", _any(rf"{_ASK}[^.?!\n]{{0,25}}\b{_SECRET}\b")),
    ("repeat_above", _any(r"\b(?:repeat|print|output|echo|copy)\b[^.?!\n]{0,40}\b(?:text|everything|words|content|"
                          r"message)s?\b[^.?!\n]{0,30}\b(?:above|verbatim|before the word)")),
    ("role_override", _any(r"\byou are now\b",
                           r"\bfrom now on,?\s+(?:you|act|respond|answer|behave)\b",
                           r"\bpretend (?:to be|you are|you're)\b",
                           r"\byour new (?:task|role|instructions?|job)\b",
                           r"\b(?:act|behave|respond|answer) as (?:an? |if )[^.?!\n]{0,30}"
                           r"\b(?:unfiltered|uncensored|unrestricted|jailbroken|evil|freed|without)\b",
                           r"\bfreed from (?:all |any |your )?(?:rules|restrictions|constraints)\b",
                           r"\bobey (?:only )?me\b")),
    ("jailbreak_mode", _any(r"\b(?:developer|god|jailbreak|unrestricted|dan) mode\b", r"\bjailbreak", r"\bDAN\b",
                            r"\bwithout (?:any )?(?:filters|restrictions|censorship|safety guidelines)\b",
                            r"\bno (?:restrictions|filters|rules|limitations)\b")),
    ("chat_template", _any(r"<\|im_(?:start|end)\|>", r"\[/?INST\]", r"<</?SYS>>", r"</?(?:system|context|assistant)>",
                           r"(?:^|\n)\s*(?:system|assistant)\s*:")),
    ("reply_only_with", _any(r"\b(?:reply|respond|answer|output|say|print)\b\s+(?:only|just|exclusively)\s+"
                             r"(?:with|the words?)\b")),
]
_QUESTION_EXTRA: list[tuple[str, re.Pattern]] = [
    ("before_context", _any(r"\b(?:appears?|comes?|is|was)\s+before\s+(?:the\s+word\s+)?['\"]?(?:context|question)\b")),
]
# Only in documents: text that addresses the model reading it rather than a human reader.
_CHUNK_EXTRA: list[tuple[str, re.Pattern]] = [
    ("system_instruction", _any(r"\b(?:system|developer|admin)\s+"
                                r"(?:instruction|override|command|directive|notice)s?\b")),
    ("do_not_answer", _any(r"\bdo not (?:answer|respond to|address|help with) the user'?s?\b")),
    ("addresses_model", _any(rf"\b(?:if you are|as) an? {_MODEL}\b",
                             rf"\b{_MODEL}s? (?:must|should|shall) (?:now |always )?"
                             r"(?:ignore|reply|respond|say|output|only|disregard)\b")),
]

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass
class Finding:
    pattern: str
    text: str  # the matched text

    def as_dict(self) -> dict:
        return {"pattern": self.pattern, "text": self.text}


def scan_question(text: str) -> list[Finding]:
    """Jailbreak / prompt-injection phrasing in a user question (empty when none)."""
    return [Finding(name, m.group(0).strip()) for name, pat in (*_COMMON, *_QUESTION_EXTRA)
            for m in [pat.search(text)] if m]


@dataclass
class ChunkScan:
    findings: list[Finding] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)  # the sentences carrying them
    redacted: str = ""  # the text without those sentences

    @property
    def flagged(self) -> bool:
        return bool(self.findings)


def scan_chunk(text: str) -> ChunkScan:
    """Instructions aimed at the model inside a retrieved chunk, sentence by sentence."""
    scan = ChunkScan()
    kept: list[str] = []
    pos = 0
    for m in [*_SENTENCE.finditer(text), None]:
        end = m.start() if m else len(text)
        sentence = text[pos:end]
        hits = [Finding(name, h.group(0).strip()) for name, pat in (*_COMMON, *_CHUNK_EXTRA)
                for h in [pat.search(sentence)] if h]
        if hits:
            scan.findings.extend(hits)
            scan.sentences.append(sentence.strip())
        else:
            kept.append(sentence + (m.group(0) if m else ""))
        if m:
            pos = m.end()
    scan.redacted = "".join(kept).strip() if scan.findings else text
    return scan
