"""Text from a run shown through widgets that read markdown, escaped so that it shows as written: a chunk that says
"$5 or $10" is not maths, ":red[x]" is not red, "![t](http://...)" loads no image, "# x" is no heading, "<b>" is no
tag. ``md`` for markdown (captions, errors, expander labels, bold and list text), ``code`` for an inline code span,
``html`` for text inside the HTML of st.markdown(unsafe_allow_html=True), ``attr`` for an HTML attribute's value."""
from __future__ import annotations

import html as _html
import re

# every ASCII punctuation character may be backslash-escaped in CommonMark; escaped, none starts markdown, maths
# ($, remark-math) or a streamlit directive (:red[...], :material/...:)
_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")
# what ends a line: \r\n and a lone \r as much as \n (two lone \r end an HTML block in CommonMark), and the other
# separators Python's splitlines knows
_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# in HTML, the characters markdown still reads between tags: as numeric references they are plain text to it
_HTML_PUNCT = {c: f"&#{ord(c)};" for c in "\\`*_{}[]()#+-.!|$:~=^"}


def md(text: object) -> str:
    """``text`` as markdown that shows it literally (line breaks kept as spaces: one line stays one line)."""
    return _PUNCT.sub(r"\\\1", _BREAKS.sub(" ", str(text if text is not None else "")))


def code(text: object) -> str:
    """``text`` as an inline code span (literal inside: a backtick run longer than any in the text fences it)."""
    s = _BREAKS.sub(" ", str(text if text is not None else ""))
    fence = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def html(text: object) -> str:
    """``text`` for the HTML of st.markdown(unsafe_allow_html=True): HTML-escaped, every line break a <br> (so the text
    stays one HTML block, whatever ends its lines) and markdown's punctuation as numeric character references."""
    escaped = "".join(_HTML_PUNCT.get(c) or _html.escape(c) for c in str(text if text is not None else ""))
    return _BREAKS.sub("<br>", escaped)


def attr(text: object) -> str:
    """``text`` as an HTML attribute's value (quotes escaped; line breaks as spaces)."""
    return _html.escape(_BREAKS.sub(" ", str(text if text is not None else "")), quote=True).replace("$", "&#36;")
