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
    for own in ("It is 64.", "FlashAttention computes exact attention."):
        assert standalone([own], q) == [own]
    # after a yes/no question, a claim with words of its own is read without the yes or no it opens with
    assert standalone(["Yes, it is exact."], q) == ["It is exact."]
    assert standalone(["Yes, both."], q) == [f"{q} Yes, both."]  # a few words that say nothing alone
    assert standalone(["Yes, it is 16 tokens."], "What is the default block size?") == ["Yes, it is 16 tokens."]
    assert standalone(["Yes."], "") == ["Yes."]


def test_a_part_that_only_declines_is_no_claim():
    # a hedged answer is judged on what it asserts: its "I don't know" is no unsupported claim
    assert decompose("I don't know. The default block size is 16 tokens.") == ["The default block size is 16 tokens."]
    assert decompose("The documents do not mention the 2030 cup, but Brazil won it 3-1.") == ["Brazil won it 3-1."]
    assert decompose("I'm sorry, I cannot find that in the context. Please provide more details.") == []
    assert decompose("Sorry, vLLM uses 16 tokens per block.") == ["Sorry, vLLM uses 16 tokens per block."]


def test_citation_marks_of_any_style_are_no_part_of_a_claim():
    claim = "Paris is the capital of France."
    for cited in ("Paris is the capital of France [1].", "Paris is the capital of France [doc1].",
                  "Paris is the capital of France [source: doc1].", "Paris is the capital of France [1, 2].",
                  "Paris is the capital of France [1][2].", "Paris is the capital of France\u30101\u3011.",
                  "Paris is the capital of France^[1].", "Paris is the capital of France. [1]",
                  "Paris is the capital of France (see doc1).", "Paris is the capital of France [d0#0]."):
        assert decompose(cited) == [claim], cited
    for bare in ("[1]", "[doc1] [doc2]", "[1][2]", "Sources: [doc1], [doc2].", "(see doc1)"):
        assert decompose(bare) == [], bare
    # bracketed text that belongs to the claim stays
    assert decompose("Scores lie in [0, 1].") == ["Scores lie in [0, 1]."]
    assert decompose("Ratings range over [1, 10].") == ["Ratings range over [1, 10]."]
    assert decompose("The first element is array[3].") == ["The first element is array[3]."]
    assert decompose("Orca (OSDI 2022) introduced iteration-level scheduling.") == [
        "Orca (OSDI 2022) introduced iteration-level scheduling."]


def test_a_fragment_left_by_a_split_joins_the_next_sentence():
    assert decompose("Wait... it works now. Then it stops.") == ["it works now.", "Then it stops."]
    assert decompose("Big news... the lab is in Lyon.") == ["Big news... the lab is in Lyon."]
    assert decompose("Hmm... the lab is in Lyon.") == ["the lab is in Lyon."]  # an interjection says nothing
    assert decompose("Plan B. The lab moved to Lyon.") == ["Plan B. The lab moved to Lyon."]
    assert decompose("The lab moved to Lyon. Done.") == ["The lab moved to Lyon. Done."]
    assert decompose("Yes.") == ["Yes."]
    assert decompose("- Paris\n- Berlin") == ["Paris.", "Berlin."]  # list items are units of their own


def test_pleasantries_headings_and_list_intros_are_no_claims():
    steps = ["Run pip install foo.", "Call foo.setup() once."]
    for framed in ("Sure! Run pip install foo. Call foo.setup() once.",
                   "Great question! Run pip install foo. Call foo.setup() once.",
                   "Run pip install foo. Call foo.setup() once. Hope this helps!",
                   "Here are the steps:\n1. Run pip install foo.\n2. Call foo.setup() once.",
                   "## Setup\n\n- Run pip install foo.\n- Call foo.setup() once.",
                   "**Setup**\n- Run pip install foo.\n- Call foo.setup() once.",
                   "Follow these steps:\n- Run pip install foo.\n- Call foo.setup() once."):
        assert decompose(framed) == steps, framed
    assert decompose("**Answer:** run pip install foo.") == ["run pip install foo."]
    assert decompose("Sure, the default is 16 tokens.") == ["the default is 16 tokens."]
    # only an intro or a label is framing: a short answer made of such words is an answer (HaluEval's "The Go-Go's")
    for answer in ("The Go-Go's", "Go.", "Follow the steps.", "You need to know."):
        assert decompose(answer) == [answer if answer.endswith(".") else answer + "."], answer
    # an intro that states something is read with each item under it (its subject)
    assert decompose("The library supports 3 platforms:\n- Linux\n- macOS") == [
        "The library supports 3 platforms: Linux.", "The library supports 3 platforms: macOS."]


def test_asides_that_lean_on_their_sentence_stay_in_it():
    assert decompose("The default bucket size is 25 MB (not 50 MB as in older releases).") == [
        "The default bucket size is 25 MB (not 50 MB as in older releases)."]
    assert decompose("The default bucket size is 25 MB (older releases used 50 MB).") == [
        "The default bucket size is 25 MB.", "older releases used 50 MB."]


def test_one_full_stop_ends_a_claim():
    assert decompose('He said "go." Then the lab closed in 2001.') == ['He said "go."', "Then the lab closed in 2001."]
    assert decompose("It was trained in 2020") == ["It was trained in 2020."]
    assert all(not c.endswith((":.", '".', ")..")) for c in decompose("Steps: run it twice (after a pause.) now."))


def test_a_long_claim_keeps_its_negation_with_what_it_negates():
    # 43 words, once cut at word 22 between "does not." and "support Windows ..."
    answer = ("As the maintainers explained in the public forum last spring after a long discussion about testing "
              "costs the library does not support Windows, macOS or FreeBSD and it ships prebuilt wheels for each of "
              "them on every release of the package.")
    claims = decompose(answer)
    assert claims[0].endswith("the library does not support Windows, macOS or FreeBSD.")  # cut at "and it ships"
    assert not any(c.rstrip(".").endswith(("not", "no", "never")) for c in claims)
    longer = ("As the maintainers explained in the public forum last spring and again in the release notes for "
              "version 2 of the project, after a long discussion about testing costs and the lack of volunteers, the "
              "library does not support Windows, macOS or FreeBSD.")
    claims = decompose(longer)
    assert len(claims) == 2 and claims[1].startswith("after a long discussion")  # at the comma, not in the list
    words = " ".join(["w"] * 39 + ["not", "support"] + ["x"] * 39)  # no joint: the even cut falls after "not"
    assert not any(p.split()[-1] == "not" for p in split_sentences(words))
    assert " ".join(split_sentences(words)) == words


def test_the_joined_window_counts_cjk_characters_as_words():
    from eval.claims import MAX_WINDOW_WORDS
    from eval.sentences import word_count

    text = "".join(f"{c * 30}\u3002" for c in "\u6771\u4eac\u5927\u962a")  # four sentences of 31 characters each
    (cands,), _ = claim_candidates(["\u6771\u4eac\u5927\u962a"], [("c", text)], max_premises=1)
    assert all(word_count(w) <= MAX_WINDOW_WORDS for _, w in cands)


def test_two_word_sentences_are_claims_and_one_dash_table_rules_are_rules():
    assert decompose("Revenue grew 12% in Q3. Costs fell.") == ["Revenue grew 12% in Q3.", "Costs fell."]
    assert decompose("| GPU | Memory |\n|-|-|\n| A100 | 80 GB |") == ["GPU is A100, Memory is 80 GB."]


def test_an_instruction_is_a_claim_and_a_pointer_elsewhere_is_not():
    for instruction in ("You can check the pod status with kubectl get pods.",
                        "Please contact support at help@acme.com to reset your password.",
                        "You can try setting batch_size to 16."):
        assert decompose(instruction) == [instruction], instruction
    for pointer in ("You may want to check the official documentation for more details.", "Please try again."):
        assert decompose(pointer) == [], pointer


def test_attribution_lines_and_source_lists_are_no_claims():
    """Where an answer says it comes from is no claim about the world: a "Source:" line, a "Sources:" label or
    heading and the list under it (its items were judged as claims: "doc1." unsupported)."""
    for answer in ("The limit is 64.\n(Source: the handbook, page 3)", "The limit is 64. Source: handbook.",
                   "The limit is 64.\n\nSources:\n- doc1\n- the 2023 handbook", "The limit is 64.\nReferences: [1] vLLM docs.",
                   "The limit is 64.\n\n## References\n1. vLLM docs\n2. the FAQ", "The limit is 64.\nSee also: the FAQ."):
        assert decompose(answer) == ["The limit is 64."], answer
    # a list after the sources ends them; a sentence about a source is a claim
    assert decompose("## Sources\n- doc1\n\nIt also runs on GPUs.") == ["It also runs on GPUs."]
    assert decompose("The source of the leak was a bad config.") == ["The source of the leak was a bad config."]
    assert decompose("Steps:\n- Install it.\n- Run it now.") == ["Install it.", "Run it now."]


def test_a_code_block_is_one_claim_with_its_intro():
    assert decompose("Run:\n```python\nmodel.eval(). x = 1\n```") == ["Run: model.eval(). x = 1."]
    assert decompose("Install it with pip. Then run:\n~~~\nvllm serve\n~~~\nIt needs CUDA 12.") == [
        "Install it with pip. Then run: vllm serve.", "It needs CUDA 12."]
    assert decompose("It is fast.\n```\nx=1\n```") == ["It is fast.", "x=1."]


def test_list_items_are_read_with_the_intro_that_carries_their_subject():
    """An audit: "vLLM supports:" over "- pipeline parallelism" gave the claims "vLLM supports.", "tensor
    parallelism.", "pipeline parallelism.", each supported by anything about the subject: a wrong answer was `ok`."""
    assert decompose("vLLM supports:\n- tensor parallelism\n- pipeline parallelism") == [
        "vLLM supports: tensor parallelism.", "vLLM supports: pipeline parallelism."]
    assert decompose("It is fast. vLLM supports:\n1. tensor parallelism\n2. pipeline parallelism\n\nThat is all.") == [
        "It is fast.", "vLLM supports: tensor parallelism.", "vLLM supports: pipeline parallelism.", "That is all."]
    # a framing intro carries nothing; a nested intro goes with the item after it only
    assert decompose("Here are the steps:\n- Install it.\n- Run it.") == ["Install it.", "Run it."]
    assert decompose("Parallelism:\n- Tensor:\n  - within a node\n- Pipeline: across nodes") == [
        "Parallelism: Tensor: within a node.", "Parallelism: Pipeline: across nodes."]
    # the lead ends with its list
    assert decompose("Modes:\n- fast mode\n\nThe cache is paged.") == ["Modes: fast mode.", "The cache is paged."]


def test_links_are_their_text_and_a_bare_pointer_to_an_address_is_no_claim():
    assert decompose("The default is set in [config.py](https://github.com/x/config.py).") == [
        "The default is set in config.py."]
    assert decompose("It is fast (see [the docs](https://docs.vllm.ai/x.html)).") == ["It is fast (see the docs)."]
    assert decompose("![diagram](x.png) The cache is paged.") == ["The cache is paged."]
    for pointer in ("More: https://docs.vllm.ai/en/latest/index.html", "See https://x.io for details.",
                    "Docs: https://x.io", "Read more at www.vllm.ai."):
        assert decompose(f"It runs on 8 GPUs. {pointer}") == ["It runs on 8 GPUs."], pointer
    # an address inside a statement stays: the statement is checked
    assert decompose("The weights are at https://hf.co/x and load in 3 s.") == [
        "The weights are at https://hf.co/x and load in 3 s."]
