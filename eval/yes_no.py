"""Yes/no questions and the answers to them, read the same way by every metric: whether a question asks for a yes or a
no (``asks_yes_no``), the yes or no an answer opens with (``leading_polarity``), an answer that is nothing else
(``bare_answer``), and a statement without the yes or no it opens with (``without_answer_word``). Pure functions."""
from __future__ import annotations

import re

from eval.sentences import word_count
from eval.tokens import content_tokens

AUX = (r"(?:is|are|was|were|am|does|do|did|can|could|should|would|will|shall|may|might|must|has|have|had|"
        r"isn[’']t|aren[’']t|wasn[’']t|weren[’']t|doesn[’']t|don[’']t|didn[’']t|can[’']t|couldn[’']t|"
        r"shouldn[’']t|wouldn[’']t|won[’']t|hasn[’']t|haven[’']t|hadn[’']t)")
_YES_NO_Q = re.compile(rf"^\W*{AUX}\b(?!.*\bor\b(?!\s+not\b))", re.IGNORECASE | re.S)

_YES_NO = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
# other ways to open a bare answer to a yes/no question, read only when the word stands alone ("Correct.", "Nope,";
# not "Right now ..." nor "True positives ..."); an emphatic "not" that ends its clause denies ("Definitely not.")
_OTHER_YES = re.compile(r"^\W*(?:yeah|yep|yup|correct|right|true|indeed|exactly|absolutely|definitely|certainly|"
                        r"of course|sure|affirmative)(?=\s*(?:[.,;:!]|$))", re.IGNORECASE)
_OTHER_NO = re.compile(r"^\W*(?:nope|nah|never|negative|no way|incorrect|wrong|false|not really|not at all|"
                       r"(?:absolutely|definitely|certainly|of course|really) not)(?=\s*(?:[.,;:!]|$))", re.IGNORECASE)
# both at once answers neither ("Yes and no.", "Yes or no?")
_BOTH = re.compile(r"^\W*(?:yes|no)\s+(?:and|or)\s+(?:yes|no)\b", re.IGNORECASE)
# a "no" that affirms ("No doubt, it is exact.", "No question.", "Without a doubt.") and one that answers nothing: a
# comparison or a concession ("No more than 8 GPUs.", "No later than v2.", "No matter the size, ...")
_AFFIRMING_NO = re.compile(r"^\W*(?:no\s+(?:doubt|question)|without\s+(?:a\s+|any\s+)?doubt|no\s+problem)(?![^\W\d_])",
                           re.IGNORECASE)
_UNANSWERING_NO = re.compile(r"^\W*no\s+(?:(?:more|less|fewer|later|earlier|sooner|longer|other)\s+than|matter)\b",
                             re.IGNORECASE)

# what a bare answer to a yes/no question is made of: the answer word, an intensifier, and the pieces content_tokens
# leaves of a negated auxiliary ("No, it isn't." -> no, isn, t)
POLARITY_WORDS = frozenset(
    "yes yeah yep yup no nope nah not never correct incorrect right wrong true false indeed exactly absolutely "
    "definitely certainly really sure course affirmative negative way t isn aren wasn weren doesn don didn hasn haven "
    "hadn can won wouldn shouldn couldn mustn needn".split())


def asks_yes_no(question: str) -> bool:
    """``question`` opens with an auxiliary ("Is ...", "Does ...", "Can't ...") and offers no alternatives ("Is it FP8
    or FP16?" asks for one of them; "or not" is no alternative)."""
    return bool(_YES_NO_Q.match(question.strip()))


def bare_answer(text: str) -> bool:
    """``text`` is only an answer word to a yes/no question ("Yes.", "No, it isn't.", "Correct."): it says nothing
    without its question."""
    if all(t in POLARITY_WORDS for t in content_tokens(text)):
        return True
    rest = _after_answer_word(text) if _AFFIRMING_NO.match(text) else None  # "No doubt.", "Without a doubt, yes."
    return rest is not None and bare_answer(rest)


def leading_polarity(text: str) -> str | None:
    """"yes" or "no" when ``text`` opens with an answer to a yes/no question ("No, it isn't.", "Correct.", "Nope.",
    "Definitely not.", "No one uses it."; "No doubt, it is." is a yes); else None, also for a "no" that answers
    nothing ("No more than 8 GPUs.", "No matter the size, ...")."""
    if _BOTH.match(text):
        return None
    if _AFFIRMING_NO.match(text):
        return "yes"
    m = _YES_NO.match(text)
    if m and not _UNANSWERING_NO.match(text):
        return m.group(1).lower()
    return "no" if _OTHER_NO.match(text) else "yes" if _OTHER_YES.match(text) else None


_ANSWER_WORD_END = re.compile(r"\s*[,;:.!\u2013\u2014-]+\s*")
MIN_STATEMENT_WORDS = 3  # what follows a yes or no is a statement of its own from three words ("They are American.")


def _after_answer_word(text: str) -> str | None:
    """What follows the yes or no ``text`` opens with ("Yes, it is exact." -> "it is exact."); None when it opens with
    none (or with a word that is no answer: "No one uses it.")."""
    if _UNANSWERING_NO.match(text) or _BOTH.match(text):
        return None
    found = [m for p in (_AFFIRMING_NO, _YES_NO, _OTHER_NO, _OTHER_YES) if (m := p.match(text))]
    m = max(found, key=lambda m: m.end(), default=None)  # the whole answer phrase ("No way,", not its "No")
    end = m and _ANSWER_WORD_END.match(text, m.end())
    return text[end.end():] if end else None


def after_answer_word(text: str) -> str:
    """``text`` without the yes or no it opens with, whatever follows ("No, it is not." -> "it is not."); unchanged when
    the word is no answer ("No GPU supports it.", "No doubt about it.") or none opens it."""
    rest = _after_answer_word(text)
    return text if rest is None else rest


def short_answer(text: str) -> bool:
    """``text`` is a yes or no with a few words that say nothing without the question ("Yes, both.", "No, since
    v0.3."): read after its question, like a bare answer."""
    rest = _after_answer_word(text)
    return rest is not None and not bare_answer(rest) and word_count(rest) < MIN_STATEMENT_WORDS


def without_answer_word(text: str) -> str:
    """``text`` without the yes or no it opens with, where a statement of its own follows ("Yes, it is exact." -> "It is
    exact."; "No; keep it within one node." -> "Keep it within one node."); unchanged when it opens with none, when
    nothing checkable follows ("No, it isn't."), when a few words follow ("Yes, both.": short_answer) or when the word
    is no answer ("No one uses it.")."""
    rest = _after_answer_word(text)
    if rest is None or bare_answer(rest) or word_count(rest) < MIN_STATEMENT_WORDS:
        return text
    return rest[:1].upper() + rest[1:]
