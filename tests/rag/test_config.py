"""rag/config.py against the README: the Configuration section's example file loads and is the defaults."""
import re
from pathlib import Path

from rag.config import PipelineConfig, load_config

ROOT = Path(__file__).resolve().parents[2]


def test_the_readmes_configuration_example_loads_and_holds_the_defaults(tmp_path):
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Configuration", 1)[1]
    block = re.search(r"```toml\n(.*?)```", section, re.DOTALL).group(1)
    (tmp_path / "ragdoctor.toml").write_text(block, encoding="utf-8")
    cfg = load_config(tmp_path / "ragdoctor.toml", environ={})
    assert cfg.config_hash() == PipelineConfig().config_hash()


def test_a_blank_path_or_name_is_refused_naming_the_field_and_where_it_came_from(tmp_path):
    """corpus = "" (or RAGDOCTOR_CORPUS= , an unset variable in a CI file) used to read the current folder as the
    corpus: every text setting (paths, model names) refuses a blank value, as --corpus "" does."""
    import pytest

    from corpora.errors import InputError

    (tmp_path / "blank.toml").write_text('[pipeline]\ncorpus = ""\nindex_dir = "idx"\n', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_config(tmp_path / "blank.toml", environ={})
    assert exc.value.one_line() == f"{tmp_path / 'blank.toml'}: field 'corpus': is blank"
    for var, field in [("RAGDOCTOR_CORPUS", "corpus"), ("RAGDOCTOR_QUESTIONS", "questions"),
                       ("RAGDOCTOR_INDEX_DIR", "index_dir"), ("RAGDOCTOR_EMBEDDING__MODEL", "embedding.model"),
                       ("RAGDOCTOR_EMBEDDING__DEVICE", "embedding.device"),
                       ("RAGDOCTOR_RETRIEVAL__RERANKER", "retrieval.reranker"),
                       ("RAGDOCTOR_GENERATION__MODEL", "generation.model")]:
        for blank in ("", "  "):
            with pytest.raises(InputError) as exc:
                load_config(None, environ={var: blank})
            assert exc.value.one_line() == f"environment variable {var}: field '{field}': is blank"
    with pytest.raises(InputError, match=r"^<config>: field 'questions': is blank"):
        load_config(None, {"questions": " "}, environ={})
    assert load_config(None, environ={"RAGDOCTOR_CORPUS": "corpus.jsonl"}).corpus == "corpus.jsonl"
    assert load_config(None, environ={}).guardrails.topic == ""  # a text that may be empty stays so


def test_a_request_timeout_is_at_most_a_day():
    """1e308 s passed the > 0 check, then overflowed the clock in every request ("every question failed")."""
    import pytest

    from corpora.errors import InputError

    assert load_config(None, {"generation": {"timeout": 86400}}, environ={}).generation.timeout == 86400
    for value in ("1e308", "86401"):
        with pytest.raises(InputError, match=r"^environment variable RAGDOCTOR_GENERATION__TIMEOUT: field "
                                             r"'generation\.timeout': Input should be less than or equal to 86400"):
            load_config(None, environ={"RAGDOCTOR_GENERATION__TIMEOUT": value})
