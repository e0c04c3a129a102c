"""Where a sentence may not end: after a common abbreviation ("e.g.", "Dr.", "Fig.") or a lone letter ("J. Smith",
"U.S. troops"). Lookbehind guards, put before a pattern's sentence-ending punctuation; shared by the context budget's
sentence cut (rag/context_budget.py) and claim splitting (eval/claims.py)."""
from __future__ import annotations

import re

ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "dr.", "fig.", "no.", "approx.", "mr.", "ms.", "al.", "eq.", "sec.")
NOT_AFTER_ABBREVIATION = ("(?i:" + "".join(rf"(?<!\b{re.escape(a)})" for a in ABBREVIATIONS) + ")"
                          + r"(?<![\s.][A-Za-z]\.)(?<!^[A-Za-z]\.)")
