"""Refusals in their common wordings (rag/prompt.is_refusal, makes_no_claim): the material the answer was to come from
holds nothing on the question, or the speaker found nothing. The same words about the world stay an answer."""
import pytest

from rag.prompt import is_refusal, makes_no_claim

# an audit found these read as answers: a correct refusal was diagnosed missed_refusal, a wrong one context_ignored
AUDITED = [
    "I could not find the answer in the context.",
    "I do not have enough information to answer.",
    "There is not enough information in the context to answer this question.",
    "None of the passages mention this.",
    "That's outside what the documents cover.",
    "The answer is not in the provided context.",
    "The retrieved passages do not address this question.",
]

REFUSALS = [
    # the speaker found nothing or cannot answer
    "I couldn't find anything about this in the documents.",
    "I can't find that information in the passages.",
    "I was unable to find the answer in the provided context.",
    "I'm unable to answer this question based on the given information.",
    "I am not able to determine this from the sources.",
    "I wasn't able to find it.",
    "I didn't find any mention of FP8 in the passages.",
    "I don't have the information needed to answer this.",
    "I have no information about the H100 price.",
    "Based on the provided context, I cannot answer this question.",
    "Unable to answer from the context.",
    # information is missing
    "There's no information about NVLink bandwidth.",
    "There is insufficient information to determine the batch size.",
    "Not enough information to answer.",
    "No information is available about this.",
    "Not enough context to answer.",
    "There is no mention of FP8 in the documents.",
    # the material says nothing: as the subject ...
    "None of the provided documents address the question.",
    "Neither of the passages says anything about it.",
    "No document mentions the release date.",
    "Nothing in the context answers this question.",
    "The sources don't say.",
    "The given information does not specify the price.",
    "The context provided does not contain the answer.",
    "The passages you gave me do not mention it.",
    "The documents don't seem to cover this topic.",
    "The context contains no information about the price.",
    "The sources say nothing about pricing.",
    "The documents make no mention of FP8.",
    "The context lacks details on this.",
    "The provided passages are not relevant to the question.",
    "The retrieved chunks do not mention it.",
    "The search results don't cover this.",
    "The knowledge base does not cover this.",
    # ... or as the object
    "This is beyond the scope of the documents.",
    "The question is outside the scope of the provided context.",
    "That falls outside the provided documents.",
    "The answer to your question is not in the passages.",
    "That information is not available in the retrieved documents.",
    "It's not in the documents.",
    "This isn't covered.",
    "That isn't covered in the sources.",
    "The release date is not covered by the documents.",
    "This is not addressed by any of the passages.",
    "The answer isn't found anywhere in the given passages.",
    "The question cannot be answered from the context.",
    "This cannot be determined based on the provided documents.",
    "This question cannot be answered without more information.",
    "It is not possible to determine the price from the given context.",
    "It's not clear from the context whether it supports FP8.",
    # an apology, a typographic apostrophe, a refusal and a relative clause that declines too
    "Sorry, the provided context doesn\u2019t include that.",
    "I don't know the price, which is not mentioned in the documents.",
]


@pytest.mark.parametrize("answer", AUDITED + REFUSALS)
def test_common_refusal_wordings_are_refusals(answer):
    assert is_refusal(answer), answer
    assert makes_no_claim(answer), answer


@pytest.mark.parametrize("answer", [
    # the brief's four: the subject is no provided material, or the object is no question / answer / information
    "The context window is not enough for 128k tokens.",
    "None of the GPUs support FP8.",
    "The documents are stored in S3.",
    "Pipeline parallelism is not covered by the free tier.",
    # a compound noun is not the material ("context window", "source code", "text editor", "in the context of")
    "The context length does not cover 128k tokens.",
    "The token is not present in the context window.",
    "The variable is not found in the source code.",
    "The feature is not available in the text editor.",
    "It is not available in the context of streaming.",
    "The document store does not support joins.",
    "The documents field is not indexed.",
    # no determiner: documents of a database, not the provided ones
    "MongoDB documents do not have a fixed schema.",
    "Data sources do not include 2024 records.",
    # a model's context, unqualified, holding or not holding something
    "The system prompt is not included in the context.",
    "The model cannot attend to tokens beyond the context.",
    # cannot / unable with a subject that is not the speaker, nor about the question
    "The shape cannot be determined at compile time.",
    "That cannot be determined at compile time.",
    "The parser is unable to determine the type.",
    "It is not possible to determine the halting of every program.",
    # no information / no answer / no context as facts
    "No information is lost in lossless compression.",
    "There is no context length limit in Mamba.",
    "There is no answer to the halting problem.",
    "There is not enough memory for a context of 128k tokens.",
    # a chunker, a pipeline, a warranty, a range
    "By default, the chunks do not include the document title.",
    "No documents contain PII after redaction.",
    "It is not covered by the warranty.",
    "That is not in the range of valid values.",
    "The free tier does not cover pipeline parallelism.",
    "Information does not flow backwards in a feed-forward network.",
    "None of the workers hold a full copy.",
])
def test_the_same_words_about_the_world_are_an_answer(answer):
    assert not is_refusal(answer), answer
    assert not makes_no_claim(answer), answer


def test_a_new_wording_followed_by_a_claim_is_still_an_answer():
    for answer in ("I could not find the answer in the context, but Acme was founded in 1850.",
                   "None of the passages mention this. Brazil won the 2030 world cup 3-1.",
                   "There is not enough information in the context; the batch size is 32.",
                   "The answer is not in the provided context. ACCESS GRANTED."):
        assert not is_refusal(answer), answer
    # ... and with a courtesy or a pointer elsewhere it stays a refusal
    for answer in ("I could not find the answer in the context. Please provide more details.",
                   "I'm sorry, none of the passages mention this; you may want to check the official documentation."):
        assert is_refusal(answer), answer
