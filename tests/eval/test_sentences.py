"""Sentence splitting for claims and premises (eval/sentences.py, via eval.claims.split_sentences / sentence_windows):
list markers, hard wraps, tables, CJK, abbreviations, and where long runs are cut."""
from eval.claims import MAX_WINDOW_WORDS, decompose, sentence_windows, split_sentences
from eval.sentences import MAX_SENTENCE_WORDS, cut, sentence_blocks


def test_a_hard_wrapped_number_continues_its_sentence():
    text = "The laboratory was founded in Lyon by Marie Curie in\n1998. Its first director was Paul Martin."
    assert split_sentences(text) == ["The laboratory was founded in Lyon by Marie Curie in 1998.",
                                     "Its first director was Paul Martin."]
    assert split_sentences("It moved after a fire destroyed\n3. buildings burned.") == [
        "It moved after a fire destroyed 3.", "buildings burned."]  # the number stays; only a list deletes it
    assert decompose("It was founded in\n1998. Later it moved to Paris.") == [
        "It was founded in 1998.", "Later it moved to Paris."]


def test_numbered_lists_still_lose_their_markers():
    for text in ("Steps:\n1. install it\n2. run it", "1. install it\n2. run it",
                 "Do this\n1. install it\n2. run it",  # a "1." that a "2." follows
                 "Steps:\n1. install it and\nwait\n2. run it"):  # a wrapped item, then the next number
        sents = split_sentences(text)
        assert sents[-2:] in (["install it", "run it"], ["install it and wait", "run it"]), (text, sents)
    assert split_sentences("Intro:\n- a thing here\n* another one\n• third one") == [
        "Intro:", "a thing here", "another one", "third one"]


def test_an_inline_numbered_list_is_cut_at_its_markers():
    assert split_sentences("There are 3 options: 1. fast 2. slow 3. medium.") == [
        "There are 3 options: fast, slow, medium."]
    assert split_sentences("To set it up: 1. Install the package with pip. 2. Call setup once.") == [
        "To set it up:", "Install the package with pip.", "Call setup once."]


def test_abbreviations_do_not_end_sentences():
    text = ("Prof. Lee and Mrs. Jones met Ms. Wu in St. Louis. Acme Inc. and Foo Ltd. and Bar Co. and Baz Corp. "
            "signed on Jan. 5 with Sr. and Jr. staff. A vs. B was approx. even at Mt. Fuji on Main Ave. in Sept. "
            "The dept. was est. in 1990.")
    assert split_sentences(text) == [
        "Prof. Lee and Mrs. Jones met Ms. Wu in St. Louis.",
        "Acme Inc. and Foo Ltd. and Bar Co. and Baz Corp. signed on Jan. 5 with Sr. and Jr. staff.",
        "A vs. B was approx. even at Mt. Fuji on Main Ave. in Sept. The dept. was est. in 1990."]
    assert split_sentences("It happened in May. Then it ended.") == ["It happened in May.", "Then it ended."]


def test_cjk_sentence_ends_split_and_cjk_text_is_cut():
    assert split_sentences("東京は日本の首都です。人口は約1400万人です！本当？はい．") == [
        "東京は日本の首都です。", "人口は約1400万人です！", "本当？", "はい．"]
    assert decompose("東京は日本の首都です。人口は約1400万人です。") == [
        "東京は日本の首都です。", "人口は約1400万人です。"]
    long = "東" * 100  # no white space at all: each character is a word
    pieces = split_sentences(long)
    assert len(pieces) == 3 and "".join(pieces) == long


def test_table_rows_are_units_read_with_their_header():
    table = "| Model | Parameters |\n|---|---|\n| GPT-3 | 175B |\n| Falcon | 180B |"
    assert split_sentences(table) == ["Model is GPT-3, Parameters is 175B.", "Model is Falcon, Parameters is 180B."]
    assert decompose(table) == ["Model is GPT-3, Parameters is 175B.", "Model is Falcon, Parameters is 180B."]
    many = "| Model | Size | Year |\n|---|---|---|\n" + "\n".join(f"| m{i} | {i}B | 20{i:02d} |" for i in range(30))
    assert all("Model is" in s for s in split_sentences(many)) and len(split_sentences(many)) == 30


def test_long_sentences_are_cut_at_clause_joints_and_never_after_a_negation():
    s = ("As the maintainers explained in the public forum last spring and again in the release notes for version 2 "
         "of the project, after a long discussion about testing costs and the lack of volunteers, the library does not "
         "support Windows, macOS or FreeBSD.")
    pieces = split_sentences(s)
    assert len(pieces) == 2 and pieces[0].endswith("of the project,")
    assert "does not support Windows" in pieces[1]
    words = ["w"] * 39 + ["not", "support"] + ["x"] * 39  # no joint at all: the even cut falls after "not"
    pieces = split_sentences(" ".join(words))
    assert all(not p.split()[-1] == "not" for p in pieces) and " ".join(pieces).split() == words
    assert all(len(p.split()) <= MAX_SENTENCE_WORDS for p in pieces)
    assert cut("a b c", 2) == ["a b", "c"]


def test_a_fact_across_a_cut_is_whole_in_a_window_and_long_pairs_are_cut_not_dropped():
    filler = [f"w{i}" for i in range(74)]
    fact = "the reactor was shut down in 2011 after the earthquake".split()
    text = " ".join(filler[:33] + fact + filler[33:64])  # the fact straddles the even cut at word 37
    assert not any(" ".join(fact) in p for p in split_sentences(text))  # the cut falls inside the fact ...
    assert any(" ".join(fact) in w for w in sentence_windows(text))
    long_a, long_b = " ".join(f"a{i}" for i in range(39)) + ".", " ".join(f"b{i}" for i in range(39)) + "."
    windows = sentence_windows(f"{long_a} {long_b}")
    pair = [w for w in windows if "a38." in w and "b0" in w]
    assert pair and all(len(w.split()) <= MAX_WINDOW_WORDS for w in windows)


def test_tables_without_outer_pipes_and_code_blocks_are_units():
    """GitHub's tables need no outer pipes; a fenced code block is one unit, never split at its full stops nor glued
    to the sentence after it."""
    bare = "Batch size | Memory\n--- | ---\n8 | 16 GB\n16 | 30 GB\n\nIt fits."
    assert split_sentences(bare) == ["Batch size is 8, Memory is 16 GB.", "Batch size is 16, Memory is 30 GB.",
                                     "It fits."]
    assert split_sentences("a | b is a pipe.\nIt fits.") == ["a | b is a pipe.", "It fits."]  # no rule: prose
    code = "Install it:\n```bash\npip install vllm. **kwargs**\nvllm serve m\n```\nThen it runs."
    blocks = sentence_blocks(code)
    assert [b.kind for b in blocks] == ["text", "code", "text"]
    assert blocks[1].sentences == ["pip install vllm. **kwargs** vllm serve m"]
    assert split_sentences("~~~~\nx = 1\n~~~~\nDone.") == ["x = 1", "Done."]
    assert split_sentences("```\nnever closed. x = 1") == ["never closed. x = 1"]  # to the end, as markdown reads it
