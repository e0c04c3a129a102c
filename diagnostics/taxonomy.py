"""The failure taxonomy: every category (corpora.records.Category, the Diagnosis record's) with a written
definition; the rule a test checks is in classify.py."""
from __future__ import annotations

DEFINITIONS: dict[str, str] = {
    "ok": "The answer is right (or a correct refusal), grounded in the retrieved context and on topic.",
    "retrieval_miss": "No relevant document was retrieved (by the labels when they exist; otherwise no chunk was "
                      "judged relevant to the question). A right answer the retrieved context does not back (the "
                      "model's parametric knowledge) is a retrieval miss too; one every claim of which the context "
                      "backs is not.",
    "ranked_out": "A relevant chunk was retrieved but fell below the top-k cut-off given to the generator, or sat far "
                  "down the list.",
    "noisy_context": "Most chunks given to the generator are irrelevant (context precision below the noise threshold).",
    "ungrounded_hallucination": "The answer makes claims the retrieved context does not support, or contradicts.",
    "grounded_yet_hallucinated": "Every claim is supported by the retrieved context, yet the answer is wrong against "
                                 "the reference: the context itself was stale, conflicting or wrong (for example the "
                                 "outdated member of a conflicting pair was retrieved).",
    "context_ignored": "The context contained the answer, and the model answered otherwise or refused.",
    "incomplete": "What the answer says is right, but it leaves out claims of the reference.",
    "off_topic": "The answer does not address the question (low answer relevance), and answer correctness does not "
                 "call it right or partially right (a terse right answer is on topic).",
    "wrong_refusal": "The model refused although the corpus holds the answer.",
    "missed_refusal": "The corpus cannot answer the question, and the model answered anyway instead of refusing.",
    "guardrail_block": "A guardrail blocked the question or the answer.",
    "unmeasured": "The judges could not decide (judge failure, generation error, missing inputs), the answer is "
                  "wrong and groundedness could not say why, groundedness or correctness a verdict rests on is "
                  "unmeasured (or the run did not evaluate it), or a refusal's question has no label saying whether "
                  "it is answerable; the reason is kept.",
}
