"""Abbreviations that do not end a sentence (rag/sentence_ends.py), as the context budget's sentence cut reads them."""
from rag.context_budget import sentences


def test_titles_companies_and_months_do_not_end_a_sentence():
    text = ("Prof. Lee and Mrs. Jones founded the lab in St. Louis. Acme Inc. paid for it on Jan. 5. "
            "Ms. Wu vs. Mr. Li was approx. even. It opened in May. Then it grew.")
    assert sentences(text) == ["Prof. Lee and Mrs. Jones founded the lab in St. Louis.",
                               "Acme Inc. paid for it on Jan. 5.", "Ms. Wu vs. Mr. Li was approx. even.",
                               "It opened in May.", "Then it grew."]
