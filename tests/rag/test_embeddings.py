"""rag/embeddings.py's quiet_model_loading: transformers' warnings and progress bars, and sentence-transformers'
warnings, are silenced while a model loads or saves and put back as they were afterwards, also when two loads
overlap."""
from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator

import pytest
from transformers.utils import logging as hf_logging

from rag.embeddings import quiet_model_loading

HUB_BARS = importlib.import_module("huggingface_hub.utils.tqdm").progress_bar_states
ST_LOGGER = logging.getLogger("sentence_transformers")

State = tuple[int, bool, dict[str, bool], int]


def _state() -> State:
    return hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled(), dict(HUB_BARS), ST_LOGGER.level


def _quiet() -> bool:
    return (hf_logging.get_verbosity() == logging.ERROR and not hf_logging.is_progress_bar_enabled()
            and not ST_LOGGER.isEnabledFor(logging.WARNING)
            and not logging.getLogger("sentence_transformers.base.model").isEnabledFor(logging.WARNING))


@pytest.fixture
def user_state() -> Iterator[State]:
    """A host's own settings: warnings shown, bars on, one hub group's bars off, sentence-transformers' INFO logged;
    whatever was there, put back."""
    saved = _state()
    hf_logging.set_verbosity(logging.INFO)
    hf_logging.enable_progress_bar()
    HUB_BARS["huggingface_hub.upload"] = False
    ST_LOGGER.setLevel(logging.INFO)
    yield _state()
    hf_logging.set_verbosity(saved[0])
    (hf_logging.enable_progress_bar if saved[1] else hf_logging.disable_progress_bar)()
    HUB_BARS.clear()
    HUB_BARS.update(saved[2])
    ST_LOGGER.setLevel(saved[3])


def test_a_load_is_quiet_and_leaves_the_state_as_it_found_it(user_state):
    with quiet_model_loading():
        assert _quiet()
    assert _state() == user_state


def test_overlapping_loads_restore_once_the_last_one_ends(user_state):
    first = quiet_model_loading()
    first.__enter__()
    with quiet_model_loading():  # a second load (another thread) starts while the first runs
        pass
    assert _quiet()  # the first is still loading: still quiet
    first.__exit__(None, None, None)
    assert _state() == user_state


def test_a_plain_call_still_silences(user_state):
    quiet_model_loading()  # an older caller, without `with`
    assert _quiet()
    with quiet_model_loading():  # the next load's end puts back the state from before either
        pass
    assert _state() == user_state


@pytest.mark.model
def test_loading_minilm_leaves_the_hosts_logging_and_bars_alone(user_state):
    from rag.embeddings import make_embedder  # noqa: PLC0415

    assert make_embedder("minilm", use_cache=False).embed(["The KV cache stores keys."]).shape[0] == 1
    assert _state() == user_state


def test_a_state_the_host_set_after_an_unrestored_plain_call_is_the_one_put_back(user_state):
    quiet_model_loading()  # an older caller silenced, and nothing restored it
    hf_logging.set_verbosity(logging.WARNING)  # then the host set its own
    with quiet_model_loading():
        pass
    assert _state()[0] == logging.WARNING


def test_a_sentence_transformers_level_the_host_set_after_an_unrestored_plain_call_is_the_one_put_back(user_state):
    quiet_model_loading()
    ST_LOGGER.setLevel(logging.DEBUG)  # the host wants sentence-transformers' chatter from now on
    with quiet_model_loading():
        assert _quiet()
    assert ST_LOGGER.level == logging.DEBUG
