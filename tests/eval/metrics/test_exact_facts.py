"""Numbers and identifiers are checked exactly by every metric that reads a claim against passages (METRICS_VERSION
13): a judge, learned or lexical, reads "32 tokens" as close to "16 tokens" and "1,048,000" as "1,048,576"."""
from corpora.records import Chunk
from eval.judges.lexical import LexicalScorer
from eval.judges.numbers import numbers
from eval.judges.scorer import ScorerJudge
from eval.metrics import get
from eval.metrics.key_facts import missing_facts
from tests.eval.metrics.records import CUR, OLD, REFERENCE, trace

LOOSE = ScorerJudge(LexicalScorer(support_threshold=0.5))  # word overlap alone would call a changed number supported


def _one(metric: str, t):
    return get(metric).apply(LOOSE, "lexical", [t])[0]


def test_numbers_compare_on_every_digit():
    assert numbers("1,048,580 and 1,048,576") == {"1048580", "1048576"}
    assert numbers("1,999,999 or 2,000,000") == {"1999999", "2000000"}
    assert numbers("2.50, 2.5 and +2.5") == {"2.5"} and numbers("0.0 and -0") == {"0"}
    assert numbers("twelve") == {"12"} and numbers("one of the options", words=False) == set()


def test_a_count_said_the_english_way_is_the_number():
    """'a single node' states the reference's 'one node' (the yes/no probe's right answer was called wrong for it)."""
    assert numbers("on a single node") == numbers("one node") == {"1"} and numbers("a  Dozen GPUs") == {"12"}
    assert missing_facts("Keep it within one node.", "Keep it within a single node.") == []
    assert missing_facts("Keep it within one node.", "Keep it within two nodes.") == ["1"]
    assert numbers("single precision") == numbers("a singleton") == set() == numbers("a single node", words=False)


def test_a_percentage_is_its_fraction_and_a_multiple_its_number():
    """'cuts memory by half' and 'by 50%' state one fact; '2x faster' and 'twice as fast' too (the answer's '50' and
    '2x' were facts the reference did not state, so a right answer was overruled as contradicted)."""
    for said, other in (("It cuts memory use by half.", "It cuts memory use by 50%."),
                        ("It halves memory use.", "It cuts memory use by 50 percent."),
                        ("Use a quarter of the GPUs.", "Use 25% of the GPUs."),
                        ("It is twice as fast.", "It is 2x faster."), ("It doubles throughput.", "It is 2X faster."),
                        ("It is three times faster.", "It is 3x faster.")):
        assert missing_facts(said, other) == [] and missing_facts(other, said) == [], (said, other)
    assert missing_facts("It cuts memory use by half.", "It cuts memory use by 40%.") == ["0.5"]
    assert missing_facts("It cuts memory use by 40%.", "It cuts memory use by half.") == ["40%"]
    assert missing_facts("It is 2x faster.", "It is 3x faster.") == ["2"]
    assert numbers("half of 8 GPUs", words=False) == {"8"}
    assert numbers("The two halves of the model.") == {"2"} and numbers("It halves memory use.") == {"0.5"}  # a noun
    assert numbers("It uses double precision and double quotes.") == numbers("It doubles as a cache.") == set()
    assert numbers("It is double the size.") == numbers("It doubles throughput.") == {"2"}
    # a percentage is read like a number with a unit: a bare 50 states '50%', '50%' states no bare 50, and '0.5%' is
    # not '50%' (whose fraction is 0.5)
    assert missing_facts("The rate is 50%.", "The rate is 50.") == [] and missing_facts("It has 50 layers.", "50%.") == ["50"]
    assert missing_facts("The error rate is 0.5%.", "It is 50%.") == ["0.5%"]
    assert missing_facts("The error rate is 50%.", "It is 0.5%.") == ["50%"]


def test_the_same_number_in_another_common_writing_is_stated():
    """'4K tokens' is as often 4,096 as 4,000; 'a 7-billion-parameter model' is a 7B model; 'v2' is version 2; 'the
    first stage' states '1st' (an ordinal word states its number but claims none: 'First, install it.')."""
    for said, other in (("The limit is 4,096 tokens.", "The limit is 4K tokens."),
                        ("The window is 131072 tokens.", "The window is 128K tokens."),
                        ("The limit is 4000 tokens.", "The limit is 4k tokens."),
                        ("A 7-billion-parameter model.", "A 7B model."),
                        ("Use version 2.", "Use v2."), ("Use v2.1.", "Use version 2.1."),
                        ("It is the 1st stage.", "It is the first stage.")):
        assert missing_facts(said, other) == [] and missing_facts(other, said) == [], (said, other)
    assert missing_facts("First, install it.", "Install it.") == []
    assert missing_facts("Use v2.", "Use v3.") == ["v2"] and missing_facts("Use version 2.", "Use version 3.") == ["2"]
    assert missing_facts("It has 100 nodes.", "It runs on a V100 for a second.") == ["100"]


def test_scientific_notation_units_and_rates_are_read_as_numbers():
    """A learning rate '3e-4' is 0.0003 (it read as 3, 4 and the identifier '3e'); 'GiB' and 'kB' are units, no names
    a reference must spell; frequencies and FLOPS compare across prefixes."""
    for said, other in (("The lr is 3e-4.", "The lr is 0.0003."), ("lr 1e-5", "a learning rate of 1 × 10^-5"),
                        ("It needs 16 GiB.", "It needs 16 GB."), ("It uses 1 MiB pages.", "It uses 1024 KiB pages."),
                        ("Use 16 kB.", "Use 16,000 bytes."), ("It runs at 1.5 GHz.", "It runs at 1500 MHz."),
                        ("It reaches 1 PFLOPS.", "It reaches 1000 TFLOPS."), ("It reaches 989 TFLOPS.", "989 TFLOPs.")):
        assert missing_facts(said, other) == [] and missing_facts(other, said) == [], (said, other)
    assert missing_facts("The lr is 3e-4.", "The lr is 3e-5.") == ["0.0003"]
    assert missing_facts("It runs at 1.5 GHz.", "It runs at 1.6 GHz.") == ["1.5 GHz"]
    assert numbers("1.5E+3 and 10^6 tokens") == {"1500", "1000000"}


def test_a_month_of_a_year_and_a_decade_are_dates():
    """'Released in March 2023' against 'April 2023' passed (a month name was no fact); '1990s' was 1990 seconds."""
    for said, other in (("It was released in March 2023.", "It was released in 2023-03."),
                        ("It was released in March 2023.", "It was released in 03/2023."),
                        ("Released in March 2023.", "Released on March 15, 2023."),  # a day states its month
                        ("Released in the 1990s.", "Released in the 90s."), ("Music of the 1990s.", "Music of the '90s.")):
        assert missing_facts(said, other) == [], (said, other)
    assert missing_facts("Released in March 2023.", "Released in April 2023.") == ["2023-03"]
    assert missing_facts("Released in March 2023.", "Released in 2023.") == ["2023-03"]  # more than it says
    assert missing_facts("Released in 2023.", "Released in March 2023.") == []
    assert missing_facts("Released in the 1990s.", "Released in the 1980s.") == ["1990s"]
    assert missing_facts("It times out after 30s.", "It times out after 30 seconds.") == []
    assert numbers("the 2023-24 season") == {"2023", "24"}  # no month 24


def test_a_half_of_a_unit_said_in_words_is_the_quantity():
    for said, other in (("It takes 90 minutes.", "It takes an hour and a half."),
                        ("It takes 1.5 hours.", "It takes one and a half hours."),
                        ("It takes 30 minutes.", "It takes half an hour."),
                        ("It ran for 60 hours.", "It ran for two and a half days."), ("Use 6 GPUs.", "Use half a dozen GPUs.")):
        assert missing_facts(said, other) == [] and missing_facts(other, said) == [], (said, other)
    assert missing_facts("It takes half an hour.", "It takes 40 minutes.") == ["0.5 hour"]
    assert numbers("half an apple") == {"0.5"}  # no unit: the fraction alone


def test_groundedness_does_not_let_a_changed_number_pass():
    ctx = Chunk(chunk_id="b#0", doc_id="b", rank=1, text="The maximum batch size is 64 requests.")
    r = _one("groundedness", trace("The maximum batch size is 32 requests.", contexts=[ctx]))
    assert r.value == 0.0 and "32" in r.evidence["claims"][0]["note"]
    big = Chunk(chunk_id="w#0", doc_id="w", rank=1, text="The context window is 1,048,576 tokens.")
    assert _one("groundedness", trace("The context window is 1,048,000 tokens.", contexts=[big])).value == 0.0
    assert _one("groundedness", trace("The context window is 1048576 tokens.", contexts=[big])).value == 1.0
    # a number the question gives is no claim of the answer's own
    q = trace("It holds 16 tokens.", contexts=[Chunk(chunk_id="x#0", doc_id="x", rank=1, text="It holds tokens.")])
    q = q.model_copy(update={"question": "Does a block hold 16 tokens?"})
    assert _one("groundedness", q).value == 1.0


def test_the_context_metrics_read_the_outdated_number_as_no_support():
    # the reference says 16; the outdated chunk says 32: it supports no claim of the reference
    t = trace("The default block size is 32 tokens.", contexts=[OLD.model_copy(update={"rank": 1}),
                                                                  CUR.model_copy(update={"rank": 2})])
    cp = _one("context_precision", t)
    assert [c["relevant"] for c in cp.evidence["chunks"]] == [False, True] and cp.value == 0.5
    assert _one("context_recall", trace(contexts=[OLD], reference=REFERENCE)).value < 1.0
    ns = _one("noise_sensitivity", t)
    assert ns.value > 0  # the wrong claim came from a chunk
    assert _one("context_utilisation", trace("The default block size is 32 tokens.", contexts=[OLD])).status \
        == "not_applicable"  # the context holds no claim of the reference


def test_no_contexts_and_no_reference_is_not_applicable_to_the_reference_metrics():
    for metric in ("noise_sensitivity", "context_utilisation", "context_recall"):
        r = get(metric).apply(LOOSE, "lexical", [trace(contexts=None, reference=None)])[0]
        assert r.status == "not_applicable", metric
