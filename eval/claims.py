"""Claim decomposition and premise windows, deterministic and model-free.

An answer is split into sentences (eval/sentences.py: blocks, list items, table rows, CJK ends, long runs cut at
clause joints), citation marks removed first (rag/prompt.strip_citations: chunk ids, and "[1]", "[doc1]", "【1】"...).
What states nothing checkable is no claim: a heading, a greeting or closing ("Sure!", "Great question!", "Hope this
helps!"), a list intro ("Here are the steps:"), a part that only declines or apologises (rag/prompt.makes_no_claim),
and where the answer says it comes from: a line led by "Source:", "References:", "See also:" ... and the list
items under such a label or heading ("Sources:" then "- doc1", "- the 2023 handbook"). A fenced code block is one
claim, read with the intro that leads to it ("Run:" and the command: "Run: pip install vllm."). A list item is read
with the intro over its list when that states something ("vLLM supports:" over "- pipeline parallelism": "vLLM
supports: pipeline parallelism."; alone, "pipeline parallelism." is supported by anything about it). A markdown link
is its text; a sentence that only points to a web address ("More: https://...") is no claim.
A one-word sentence ("Yes.") or a short one that trails off ("Big news...") joins the sentence after it (the one
before at a block's end). Each sentence is split into clauses at ';' and at contrastive/coordinating joints (', but',
', while', ...); clauses under three words are merged back. A parenthetical aside of three or more words is a
claim of its own unless it leans on its sentence ("(not 50 MB as in older releases)", "(which ...)": it stays in the
sentence)."""
from __future__ import annotations

import re

from eval.sentences import MAX_SENTENCE_WORDS, sentence_blocks, split_sentences, unit_spans, word_count, words
from eval.tokens import content_tokens
from eval.yes_no import asks_yes_no, bare_answer, short_answer, without_answer_word
from rag.prompt import makes_no_claim, strip_citations

__all__ = ["MAX_SENTENCE_WORDS", "MAX_WINDOW_WORDS", "bare_answer", "decompose", "premise_windows", "sentence_windows",
           "split_sentences", "standalone"]

MAX_WINDOW_WORDS = 70  # a premise window longer than this would not fit a cross-encoder's 160 tokens with its claim
_CLAUSE = re.compile(r";\s+|\uff1b\s*|,\s+(?:but|while|whereas|and then|so)\s+|\s+\u2014\s+")
_ASIDE = re.compile(r"\s*\(([^()]*)\)")  # a parenthetical aside, checked as a claim of its own when it is one
# an aside that leans on its sentence: a contrast, a negation, a relative clause, an example or a comparison
_LEANS = re.compile(r"(?:not|no|never|rather|instead|unlike|as opposed|versus|vs\b|compared|except|but|or|and|which|"
                    r"that|who|whose|where|e\.g|i\.e|cf\b|see\b|like|such as|including|especially|than|as in|\w+ by)\b",
                    re.IGNORECASE)
_ENDED = re.compile(r"[.!?\u3002\uff01\uff1f\uff0e][\"'\u201d\u2019)\]\u300d\u300f]*$")
_STRIP = " ,.:\u3001\uff0c"
_CJK_EDGE = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")

# a sentence that is only a greeting, an acknowledgement or a closing
_PLEASANTRY = re.compile(
    r"(?:(?:oh|ah|well|so|okay|ok|alright|sure(?: thing)?|certainly|of course|absolutely|hello|hi|hey|hi there|"
    r"thanks|thank you|you're welcome|happy to help|glad to help|good luck|cheers|happy coding|hmm+|wait|"
    r"(?:that's |that is |what |this is )?(?:a |an |such a )?(?:great|good|excellent|interesting|fair) question|"
    r"(?:i )?hope (?:this|that|it) (?:helps|answers your question|clarifies things)(?: you)?(?: a lot)?|"
    r"let me explain|let's (?:break it down|dive in|see)|here you go|here it is)\W*)+", re.IGNORECASE)
# ... a leading interjection or label before the statement ("Sure, run ...", "Answer: run ...")
_LEAD_IN = re.compile(r"^(?:(?:sure|certainly|of course|absolutely|okay|ok|great question|good question)[,!.]\s+|"
                      r"(?:(?:short|final|quick) )?answer\s*:\s*|tl;?dr\s*:\s*|in short\s*:\s*)", re.IGNORECASE)
# ... or an intro or label made only of these words ("Here are the steps:", "Follow these steps.", "Sources:")
_FRAME_WORDS = frozenset(
    "here following follows follow steps step options option ways way sources source references reference answer "
    "summary details detail note notes example examples key points point main list below overview result results "
    "explanation breakdown short final quick tl dr things thing some few these those reasons differences "
    "instructions procedure process approach solution let me explain look go what you need know i we sure "
    "certainly see s".split())


def says_nothing_checkable(sentence: str) -> bool:
    """A greeting, acknowledgement or closing ("Sure!", "Great question!", "Hope this helps!"), or an intro or label
    of framing words only ("Here are the steps:", "Sources:"): no claim a judge could check."""
    s = sentence.strip()
    if _PLEASANTRY.fullmatch(s):
        return True
    # only an intro or a label ("...:", "Here ..."): a short answer of such words ("The Go-Go's.") is an answer
    if not (s.rstrip(" .*").endswith(":") or re.match(r"\W*here\b", s, re.IGNORECASE)):
        return False
    tokens = content_tokens(s)
    return bool(tokens) and not re.search(r"\d", s) and all(t in _FRAME_WORDS for t in tokens)


# where an answer says it comes from, not what is so: "Source: the handbook, p. 3", "(Sources: doc1, doc2)",
# "References: [1] vLLM docs", "See also: the FAQ", or a "Sources" heading over a list of them
_ATTRIBUTION_LABEL = (r"(?:sources?|references?|citations?|cited (?:sources?|from)|bibliography|further reading|"
                      r"see also|learn more|read more|more information|more info|retrieved from|adapted from)")
_ATTRIBUTION = re.compile(rf"^\W*{_ATTRIBUTION_LABEL}\s*(?::|\s-\s)", re.IGNORECASE)
_ATTRIBUTION_HEAD = re.compile(rf"^\W*{_ATTRIBUTION_LABEL}\W*$", re.IGNORECASE)


# a markdown link or image: its text is what the answer says, its address is where ("[the docs](https://...)")
_MD_LINK = re.compile(r"(!?)\[([^\[\]\n]*)\]\((?:<[^<>\n]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+\"[^\"\n]*\")?\)")
_URL = re.compile(r"(?:\bhttps?://|\bwww\.)[^\s<>()\[\]]*[^\s<>()\[\].,;:!?'\"]")
# what a sentence around an address says when it only points there ("More: URL", "See URL for details.")
_POINTER_WORDS = _FRAME_WORDS | frozenset(
    "more docs doc documentation link links info information details guide page pages website site official url "
    "visit check read refer available online full further reading homepage repo repository github".split())


def points_elsewhere(sentence: str) -> bool:
    """A sentence holding a web address and otherwise only pointing words ("More: https://...", "See https://... for
    details."): where to read, not a claim."""
    if not _URL.search(sentence):
        return False
    return all(t in _POINTER_WORDS for t in content_tokens(_URL.sub(" ", sentence)))


def _link_texts(text: str) -> str:
    """Markdown links as their text, images dropped."""
    return _MD_LINK.sub(lambda m: "" if m.group(1) else m.group(2), text)


def attribution(sentence: str) -> bool:
    """A sentence that says where the answer comes from ("Source: the handbook, page 3."), not a claim."""
    return bool(_ATTRIBUTION.match(sentence.strip()))


_TRAILS_OFF = ("...", "\u2026", ":", ",", ";", "-")


def _merge_fragments(sentences: list[str], min_words: int) -> list[str]:
    """Sentences of one block, a fragment joined to the next one (to the one before at the block's end): one word, or
    under ``min_words`` words trailing off ("Big news... the lab is in Lyon."); a short sentence that ends is a claim
    ("Costs fell.")."""
    out: list[str] = []
    carry = ""
    for s in sentences:
        s = _join(carry, s) if carry else s
        carry = s if words(s) < min_words and (words(s) < 2 or s.rstrip().endswith(_TRAILS_OFF)) else ""
        if not carry:
            out.append(s)
    if carry:
        if out:
            out[-1] = _join(out[-1], carry)
        else:
            out.append(carry)
    return out


def _join(a: str, b: str) -> str:
    """Two sentences as one: with a space, or none between CJK ones ("本ですか？はい。")."""
    return a + b if _CJK_EDGE.search(a[-1:]) or _CJK_EDGE.search(b[:1]) else f"{a} {b}"


def _ended(claim: str) -> str:
    """The claim with one final full stop ('Steps:' -> 'Steps.', '"go."' stays as it is)."""
    return claim if _ENDED.search(claim) else claim.rstrip(":;,") + "."


def _clauses(sentence: str, min_words: int) -> list[str]:
    asides = [a.strip(_STRIP) for a in _ASIDE.findall(sentence) if _prose(a) >= min_words and not _LEANS.match(a)]
    if asides:
        sentence = _ASIDE.sub(lambda m: "" if m.group(1).strip(_STRIP) in asides else m.group(0), sentence)
    parts = [p.strip(_STRIP) for p in _CLAUSE.split(sentence) if p and p.strip(_STRIP)]
    merged: list[str] = []
    for p in parts:
        if merged and words(p) < min_words:
            merged[-1] = f"{merged[-1]}, {p}"
        else:
            merged.append(p)
    if merged and words(merged[0]) < min_words and len(merged) > 1:
        merged[1] = f"{merged[0]}, {merged[1]}"
        merged = merged[1:]
    return [*merged, *asides]


def _prose(s: str) -> int:
    """Words of two or more letters: tells an aside in words from a formula in parentheses."""
    return len(re.findall(r"[A-Za-z]{2,}", s))


def decompose(answer: str, *, min_words: int = 3) -> list[str]:
    """Atomic-ish claims of an answer, in order (see the module docstring). Empty for an empty answer. A part that
    only declines, apologises or asks for more ("I don't know.", "The documents do not mention X.") is no claim: a
    hedged answer is judged on what it asserts, not marked down for its hedge."""
    claims: list[str] = []
    sources = False  # under a "Sources:" label or heading: its list items name sources, they state nothing
    intro = False  # the last block ended with an intro ("Run:"), which a code block right after completes
    lead = ""  # an intro that carries the subject of the list items under it ("vLLM supports:")
    once = ""  # an item that introduces the next item ("- Tensor:" over "  - within a node")
    blocks = sentence_blocks(_link_texts(strip_citations(answer, footnotes=True)))
    for k, block in enumerate(blocks):
        if block.kind == "item" and sources:
            intro = False
            continue
        sources = any(_ATTRIBUTION_HEAD.match(s) for s in block.sentences[-1:])
        if block.kind != "item":
            lead = once = ""
        if block.kind == "heading":
            intro = False
            continue
        kept = [s for s in (_LEAD_IN.sub("", s).strip() for s in block.sentences)
                if s and not says_nothing_checkable(s) and not makes_no_claim(s) and not attribution(s)
                and not points_elsewhere(s)]
        if block.kind == "code" and kept and claims and intro:
            claims[-1] = f"{claims[-1].rstrip(_STRIP)}: {kept.pop(0)}"  # "Run:" and its command are one statement
        intro = bool(kept) and kept[-1].rstrip().endswith(":")
        if block.kind == "item" and kept and (lead or once):  # "vLLM supports: pipeline parallelism."
            kept[0] = " ".join(x for x in (lead, once, kept[0]) if x)
            once = ""
        if intro and k + 1 < len(blocks) and blocks[k + 1].kind == "item":
            # read with each item under it, not as a claim of its own ("vLLM supports."); an item that introduces
            # items (a nested list, whose end the text does not show) only with the one after it
            if block.kind == "item":
                once = kept.pop()[len(lead) :].strip() if kept[-1].startswith(lead) else kept.pop()
            else:
                lead = kept.pop()
        if block.kind in ("row", "code"):  # a table row read with its header, a code block: one statement each
            claims.extend(kept)
            continue
        for sentence in _merge_fragments(kept, min_words):
            claims.extend(_clauses(sentence, min_words))
    return [_ended(c) for c in claims if words(c) > 0 and not makes_no_claim(c)]


def standalone(claims: list[str], question: str) -> list[str]:
    """Each claim as it can be checked against evidence on its own: a bare yes/no ("Yes.", "No, it is not.") says
    nothing without its question, so such a claim is read after the question ("Is FlashAttention exact? Yes.");
    a claim with a word of its own stays as it is (read after the question, a short answer would share the
    question's words with any evidence about it, and word overlap could no longer tell a right one from a wrong one),
    except that after a yes/no question it is read without the yes or no it opens with ("Yes, it is exact." as "It is
    exact."): a learned judge reads "Yes," as a word the evidence lacks, and the bare yes/no checks read the word; a
    yes or no with a few words that say nothing alone ("Yes, both.") is read after the question, like a bare one."""
    q = question.strip()
    if not q:
        return claims
    yes_no = asks_yes_no(q)
    return [f"{q} {c}" if bare_answer(c) or (yes_no and short_answer(c)) else without_answer_word(c) if yes_no else c
            for c in claims]


def _pair(a: str, b: str, limit: int) -> str:
    """Two adjacent sentences as one window of at most ``limit`` words: whole when they fit, else the end of ``a``
    and the start of ``b`` (each keeps at least half of the room, or all it has), so what spans the joint is read."""
    sa, sb = unit_spans(a), unit_spans(b)
    if len(sa) + len(sb) <= limit:
        return f"{a} {b}"
    ka = min(len(sa), max(limit // 2, limit - len(sb)))
    kb = limit - ka
    return f"{a[sa[len(sa) - ka][0] :]} {b[: sb[kb - 1][1]]}"


def sentence_windows(text: str, size: int = 2) -> list[str]:
    """Windows of ``text`` (premises for claim verification), each at most MAX_WINDOW_WORDS words: the single
    sentences first, so the best-matching sentence can be named as evidence; then ``size`` consecutive sentences (a
    pair that is longer keeps the words around its joint, so a fact across the cut of a long sentence is whole in
    the window of its two pieces). Overlapping re-cut pieces as extra windows were measured and left out: more
    windows give a wrong claim more chances of a high score (pool suite, session 30: attributionbench 0.893 vs
    0.901)."""
    sents = split_sentences(text)
    windows = list(dict.fromkeys(sents))
    if len(windows) <= 1:
        return windows or ([text] if text.strip() else [])
    if size == 2:
        windows += [_pair(a, b, MAX_WINDOW_WORDS) for a, b in zip(sents, sents[1:])]
    elif size > 2:
        joined = (" ".join(sents[i : i + size]) for i in range(len(sents) - size + 1))
        windows += [w for w in joined if word_count(w) <= MAX_WINDOW_WORDS]
    return windows


def premise_windows(text: str, lead: str = "") -> list[str]:
    """The sentence windows of ``text``, each led by ``lead`` (e.g. the question, so a short reference like "25 MB"
    reads in context); the lead is never a window on its own."""
    lead = lead.strip() + " " if lead.strip() else ""
    return [lead + w for w in sentence_windows(text)]
