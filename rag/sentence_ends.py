"""Where a sentence may not end: after a common abbreviation ("e.g.", "Dr.", "Fig.") or a lone letter ("J. Smith",
"U.S. troops"). Lookbehind guards, put before a pattern's sentence-ending punctuation; shared by the context budget's
sentence cut (rag/context_budget.py) and claim splitting (eval/claims.py).

The list holds abbreviations that are almost always followed by more of the same sentence: titles before a name
("Prof. Lee", "Mrs. Jones", "St. Louis", "Mt. Fuji"), company suffixes ("Acme Inc. said"), month abbreviations before
a day ("Jan. 5"; not "May", which is a word), and Latin and reference shorthands ("vs.", "approx.", "Fig. 3").
An abbreviation that ends a sentence ("... founded by Acme Inc. The next ...") therefore joins two sentences: a
longer premise is the cheaper mistake (a split leaves a fragment such as "Prof." that a judge calls supported).
Words that are also common words at a sentence's end are left out ("no." is kept for "No. 5" as before; "min.",
"ft.", "gen.", "rep." and "may" are not listed)."""
from __future__ import annotations

import re

ABBREVIATIONS = (
    # Latin and reference shorthands
    "e.g.", "i.e.", "etc.", "vs.", "cf.", "al.", "approx.", "incl.", "esp.", "resp.", "viz.", "ca.",
    "fig.", "figs.", "eq.", "eqs.", "sec.", "ch.", "vol.", "no.", "ref.", "dept.", "est.", "univ.",
    # titles and names of places before a name
    "mr.", "mrs.", "ms.", "dr.", "prof.", "jr.", "sr.", "st.", "mt.", "ave.", "blvd.", "capt.", "col.", "lt.", "sgt.",
    # company suffixes
    "inc.", "ltd.", "co.", "corp.", "bros.",
    # months before a day ("May" is a word and has no full stop)
    "jan.", "feb.", "mar.", "apr.", "jun.", "jul.", "aug.", "sep.", "sept.", "oct.", "nov.", "dec.",
)
# every guard ends with a full stop: where the text before is no full stop they all hold, and one look back says so;
# atomic (?>...), so a pattern that fails later does not come back to try them all (a pattern tries this at every
# position of a text: sixty look-backs there made sentence splitting twenty times slower)
NOT_AFTER_ABBREVIATION = ("(?>(?<!\\.)|(?i:" + "".join(rf"(?<!\b{re.escape(a)})" for a in ABBREVIATIONS) + ")"
                          + r"(?<![\s.][A-Za-z]\.)(?<!^[A-Za-z]\.))")
