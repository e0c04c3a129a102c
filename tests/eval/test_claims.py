"""Sentence splitting and claim candidates (eval/claims.py, eval.metrics.claim_candidates): lower-cased and
unpunctuated text must not become one giant 'sentence' that a model reads only the start of."""
from eval.claims import MAX_SENTENCE_WORDS, decompose, split_sentences
from eval.metrics.verify import claim_candidates


def test_lowercase_sentences_are_split():
    text = "the kv cache grows with context. it is stored per layer! is it paged? yes."
    assert split_sentences(text) == ["the kv cache grows with context.", "it is stored per layer!", "is it paged?",
                                     "yes."]


def test_abbreviations_initials_and_decimals_do_not_split():
    text = "Dr. Smith met J. Doe in the U.S. last year. Version 3.5 ships e.g. today."
    assert split_sentences(text) == ["Dr. Smith met J. Doe in the U.S. last year.", "Version 3.5 ships e.g. today."]


def test_closing_quotes_stay_with_their_sentence():
    assert split_sentences('He said "stop." Then he left.') == ['He said "stop."', "Then he left."]


def test_unpunctuated_runs_are_cut_into_even_pieces():
    words = [f"w{i}" for i in range(150)]
    pieces = split_sentences(" ".join(words))
    assert len(pieces) == -(-150 // MAX_SENTENCE_WORDS) and all(len(p.split()) <= MAX_SENTENCE_WORDS for p in pieces)
    assert " ".join(pieces).split() == words  # nothing lost, nothing repeated


def test_decompose_lowercased_answer_into_claims():
    claims = decompose("the cache is paged. it holds keys and values.")
    assert claims == ["the cache is paged.", "it holds keys and values."]


def test_claim_candidates_add_a_window_of_the_best_sentences_and_keep_the_lead_out_of_the_evidence():
    passages = [("c1", "Paris is in France. The tower is tall. Bread is cheap. The tower opened in 1889.")]
    (cands,), evidence = claim_candidates(["The tower in Paris opened in 1889."], passages, lead="Q?", max_premises=2)
    assert len(cands) == 3  # two best windows + the joined best sentences
    joined = cands[-1][1]
    assert joined.startswith("Q? ") and "Paris is in France." in joined and "opened in 1889" in joined
    assert "Bread" not in joined
    assert evidence == passages[0][1]  # the question leads windows, but is not evidence
    (single,), _ = claim_candidates(["x"], [("c", "One sentence only.")], joined=True)
    assert single == [("c", "One sentence only.")]


def test_standalone_reads_short_claims_after_the_question():
    from eval.claims import standalone

    q = "Is FlashAttention exact?"
    assert standalone(["Yes.", "No, it is not."], q) == [f"{q} Yes.", f"{q} No, it is not."]
    for own in ("It is 64.", "FlashAttention computes exact attention.", "Yes, it is exact."):
        assert standalone([own], q) == [own]
    assert standalone(["Yes."], "") == ["Yes."]


def test_a_part_that_only_declines_is_no_claim():
    # a hedged answer is judged on what it asserts: its "I don't know" is no unsupported claim
    assert decompose("I don't know. The default block size is 16 tokens.") == ["The default block size is 16 tokens."]
    assert decompose("The documents do not mention the 2030 cup, but Brazil won it 3-1.") == ["Brazil won it 3-1."]
    assert decompose("I'm sorry, I cannot find that in the context. Please provide more details.") == []
    assert decompose("Sorry, vLLM uses 16 tokens per block.") == ["Sorry, vLLM uses 16 tokens per block."]
