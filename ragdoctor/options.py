"""Command-line options shared by the commands: the pipeline options (``pipeline_options``, read back into a
PipelineConfig by ``config_from_args``) and the range check of every numeric option.

Every numeric option is checked here, once: by its destination name, whichever command declares it.
``checked_numbers(parser)`` replaces the plain ``type=int`` / ``type=float`` of every option of every (sub)command
with the range check in ``RULES``; an option missing from ``RULES`` still gets a finite-number check, and a test keeps
``RULES`` complete. Out of range is a usage error (exit 2) naming the option, the value and the range."""
from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from corpora.errors import UsageError
from rag.config import MAX_SECONDS, PipelineConfig, http_url, load_config, set_path

# judge train's limits; judge_train/train.py TrainConfig holds the same (a test keeps them equal), so a recipe file is
# held to what the flags are
MAX_EPOCHS, MAX_BATCH_SIZE = 100, 65536
# --judge-max-chars: the llm judge's characters per ask (its statement or question keeps a fifth of them, so under 200
# it would read 40 characters of a claim); the Python API's judge_max_chars holds to the same range
MIN_JUDGE_CHARS, MAX_JUDGE_CHARS = 200, 10_000_000
JUDGE_MAX_CHARS_HELP = ("characters of text one llm-judge ask quotes, premise/passage and statement/question together "
                        "(default 3,000: fits the bundled model's 4,096-token context; raise it for a server with a "
                        "longer context); what is cut is recorded in the result's evidence as judge_cut")

PIPELINE_GROUPS = ("index", "retrieval", "generation")


def pipeline_options(p: argparse.ArgumentParser, *groups: str) -> None:
    """The pipeline options a command reads: ``groups`` among PIPELINE_GROUPS (default all). A command offers only the
    groups it reads, so a flag it would ignore (--model to `index`, say) is refused as unrecognised."""
    unknown = set(groups) - set(PIPELINE_GROUPS)
    if unknown:
        raise ValueError(f"unknown pipeline option groups: {sorted(unknown)}")
    groups = groups or PIPELINE_GROUPS
    g = p.add_argument_group("pipeline (override the config file and RAGDOCTOR_* variables)")
    if "index" in groups:
        _index_options(g)
    if "retrieval" in groups:
        _retrieval_options(g)
    if "generation" in groups:
        _generation_options(g)


def _index_options(g) -> None:
    g.add_argument("--config", help="TOML file with a [pipeline] table (see README)")
    g.add_argument("--corpus", help="'bundled', a JSONL file, a BEIR folder or a folder of .txt/.md")
    g.add_argument("--index-dir", help="where the index lives (default .ragdoctor/index)")
    g.add_argument("--embedder", help="'minilm' (bundled), 'fake', or a sentence-transformers folder")
    g.add_argument("--embedding-backend", choices=["torch", "torch-bf16"],
                   help="how the embedder runs: 'torch' (fp32, default) or 'torch-bf16' (~3x on CPUs with AMX / "
                   "AVX512-BF16); an index is queried with the backend that built it")
    g.add_argument("--kind", choices=["flat", "ivf", "hnsw", "ivfpq", "sq8"], help="faiss index kind")


def _retrieval_options(g) -> None:
    g.add_argument("--mode", choices=["dense", "bm25", "hybrid"], help="retrieval mode")
    g.add_argument("--top-k", type=int, help="chunks given to the generator (>= 1)")
    g.add_argument("--context-tokens", type=int, help="pack the ranked chunks that fit whole into this many tokens "
                   "(>= 32, the embedder's tokenizer) instead of taking the top-k")
    g.add_argument("--rerank", action=argparse.BooleanOptionalAction, default=None,
                   help="rerank the first stage's best chunks with the bundled reranker (rerank-minilm); on by "
                   "default (retrieval.rerank; model, depth and weight in the config)")


def _generation_options(g) -> None:
    g.add_argument("--base-url", action="append", help="OpenAI-compatible server (NIM, vLLM, Ollama, OpenAI); repeat "
                   "it for a fleet (requests go round-robin, a retry to the next one); default: bundled model")
    g.add_argument("--concurrency", type=int, help="requests in flight at once (default 1; the bundled model gets "
                   "as many parallel slots)")
    g.add_argument("--request-timeout", type=float, help="seconds a model request may take in all, reading its reply "
                                                         "included (default 300)")
    g.add_argument("--max-retries", type=int, help="retries of a request on 429, 5xx, timeouts and dropped "
                   "connections, with backoff and Retry-After honoured (default 1)")
    g.add_argument("--model", help="bundled GGUF name/path, or the server's model name")
    g.add_argument("--guardrails", action=argparse.BooleanOptionalAction, default=None,
                   help="run the pipeline inside NeMo Guardrails (input, retrieval and fact-checking output rails)")


def config_from_args(args: argparse.Namespace) -> PipelineConfig:
    """The pipeline configuration: the config file, then RAGDOCTOR_* variables, then the flags given (a command that
    does not offer a flag leaves its setting to the file and the variables)."""
    over: dict = {}
    for dotted, dest in PIPELINE_DESTS:
        value = getattr(args, dest, None)
        set_path(over, dotted, base_urls(value) if dest == "base_url" else value)
    return load_config(getattr(args, "config", None), over)


# (config path, argparse destination) of every flag that sets the pipeline's configuration
PIPELINE_DESTS = (("corpus", "corpus"), ("index_dir", "index_dir"), ("embedding.model", "embedder"),
                  ("embedding.backend", "embedding_backend"), ("index.kind", "kind"), ("retrieval.mode", "mode"),
                  ("retrieval.top_k", "top_k"), ("index.on_disk", "on_disk"), ("index.refine", "refine"),
                  ("retrieval.context_tokens", "context_tokens"), ("retrieval.rerank", "rerank"),
                  ("generation.base_url", "base_url"), ("generation.model", "model"),
                  ("generation.concurrency", "concurrency"), ("generation.timeout", "request_timeout"),
                  ("generation.max_retries", "max_retries"), ("questions", "questions"),
                  ("guardrails.enabled", "guardrails"))


def given_pipeline_flags(args: argparse.Namespace) -> list[str]:
    """The pipeline flags given on the command line (--config included), as written."""
    dests = [d for _, d in PIPELINE_DESTS if d != "questions"] + ["config"]
    return [f"--{d.replace('_', '-')}" for d in dests if getattr(args, d, None) is not None]


def base_urls(given: list[str] | str | None, flag: str = "--base-url") -> str | list[str] | None:
    """Repeated --base-url / --judge-base-url: one URL stays a string (the same config hash as before fleets), several
    are a fleet; a blank one, or one that is no http(s) URL, is a usage error naming ``flag``."""
    if given is None or isinstance(given, str):
        return given
    urls = [u.strip() for u in given]
    if not all(urls):
        raise UsageError(f"{flag}: a blank URL")
    try:
        urls = list(dict.fromkeys(http_url(u) for u in urls))
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None
    return urls[0] if len(urls) == 1 else urls


def _number(kind: type, low: float | None, high: float | None, *, low_open: bool = False, high_open: bool = False,
            ) -> Callable[[str], float | int]:
    show = (lambda v: f"{int(v)}") if kind is int else (lambda v: f"{v:g}")  # noqa: E731 - 4294967295, not 4.29e+09
    lo = "" if low is None else f"{'>' if low_open else '>='} {show(low)}"
    hi = "" if high is None else f"{'<' if high_open else '<='} {show(high)}"
    what = f"{'an integer' if kind is int else 'a number'}{' ' + lo if lo else ''}{' and ' + hi if lo and hi else hi}"

    def parse(text: str):
        try:
            value = kind(text.strip())
        except (ValueError, AttributeError):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        if low is not None and (value < low or (low_open and value == low)):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text}")
        if high is not None and (value > high or (high_open and value == high)):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text}")
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


positive_int = _number(int, 1, None)
non_negative_int = _number(int, 0, None)
unit_closed = _number(float, 0.0, 1.0)
unit_open = _number(float, 0.0, 1.0, low_open=True, high_open=True)
positive_float = _number(float, 0.0, None, low_open=True)
port = _number(int, 0, 65535)  # 0: a free port
# a wait in seconds: up to a day (MAX_SECONDS, as generation.timeout); 1e308 would pass a bare > 0 check and then
# overflow the clock in every request (threading's join), failing each question instead of the command line
seconds = _number(float, 0.0, MAX_SECONDS, low_open=True)

RULES: dict[str, Callable[[str], float | int]] = {
    "top_k": positive_int, "limit": positive_int, "batch_size": _number(int, 1, MAX_BATCH_SIZE),
    "probe_limit": positive_int,
    "resamples": _number(int, 50, None), "seed": _number(int, 0, 2**32 - 1), "max_examples": positive_int,
    "max_length": positive_int,
    "max_unmeasured": unit_closed, "nli_threshold": unit_open,
    "epochs": _number(float, 0.0, MAX_EPOCHS, low_open=True),
    "lr": unit_open,  # judge train's peak learning rate: (0, 1), as TrainConfig.lr
    "timeout": seconds, "request_timeout": seconds, "port": port, "per_label": positive_int,
    "max_features": _number(int, 0, 64),
    "num_workers": positive_int, "nlist": positive_int, "gpus_per_worker": _number(float, 0.0, None),
    "concurrency": _number(int, 1, 1024), "judge_concurrency": _number(int, 1, 1024),
    "judge_max_chars": _number(int, MIN_JUDGE_CHARS, MAX_JUDGE_CHARS),
    "max_retries": _number(int, 0, 100), "context_tokens": _number(int, 32, None), "max_queries": positive_int,
    "weight": unit_closed,
}


def all_parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from all_parsers(sub)


def numeric_actions(parser: argparse.ArgumentParser):
    """(parser, action) for every option whose value is a number."""
    for p in all_parsers(parser):
        for a in p._actions:
            if a.type is not None and _is_numeric(a.type):
                yield p, a


# options that may be given several times (each adds); every other option given twice is a usage error
_REPEATABLE = (argparse._AppendAction, argparse._AppendConstAction, argparse._CountAction, argparse._HelpAction,
               argparse._VersionAction, argparse._SubParsersAction)
_ONCE: dict[type, type] = {}
_NOT_BLANK: dict[type, type] = {}
MAY_BE_EMPTY = {"bm25"}  # options where '' means something (retrieval-lab --bm25 '': no extra BM25 settings)


def once_only(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Every single-valued option of every (sub)command refuses to be given twice (``--sample a --sample b``, or
    ``--rerank --no-rerank``): argparse lets the last one win in silence, which drops what the user typed first. And
    a blank value (``--out ""``, an unset shell variable) is refused, not read as "not given" or as "." (``Path("")``):
    an option's, and every positional argument's (``gate "$RUN"`` with RUN unset), whatever its ``type=``."""
    for p in all_parsers(parser):
        for action in p._actions:
            if isinstance(action, _REPEATABLE):
                continue
            if action.type is not None and action.dest not in MAY_BE_EMPTY and not _is_numeric(action.type):
                action.type = _keeps_blank(action.type)
            if action.option_strings:
                action.__class__ = _once(type(action))
            else:
                action.__class__ = _not_blank(type(action))
    return parser


def _is_numeric(convert: Callable) -> bool:
    """A number's converter: int, float, or one of this module's range checks (RULES) - not _keeps_blank's wrapper."""
    return convert in (int, float) or (getattr(convert, "__module__", "") == __name__
                                       and not getattr(convert, "keeps_blank", False))


def _keeps_blank(convert: Callable) -> Callable:
    """``convert`` (an action's ``type=``) that hands a blank string back as it is, for the blank check to see: a
    converter may hide it (``Path("")`` is ``.``)."""
    if getattr(convert, "keeps_blank", False):
        return convert

    def parse(text):
        return text if _blank(text) else convert(text)

    parse.__name__ = getattr(convert, "__name__", repr(convert))  # argparse names the type in its messages
    parse.keeps_blank = True  # type: ignore[attr-defined]
    return parse


def _blank(values) -> bool:
    """A blank value, or a list (``nargs``) holding one."""
    if isinstance(values, list):
        return any(_blank(v) for v in values)
    return isinstance(values, str) and not values.strip()


def _once(cls: type) -> type:
    if cls not in _ONCE:
        def __call__(self, parser, namespace, values, option_string=None):  # noqa: N807 - the Action protocol
            seen = namespace.__dict__.setdefault("_options_given", {})
            if self.dest in seen:
                first = seen[self.dest]
                parser.error(f"{option_string} is given twice" if first == option_string else
                             f"{option_string} and {first} are both given: give one")
            seen[self.dest] = option_string
            if _blank(values) and self.dest not in MAY_BE_EMPTY:
                parser.error(f"{option_string}: a blank value")
            cls.__call__(self, parser, namespace, values, option_string)

        _ONCE[cls] = type(f"Once{cls.__name__}", (cls,), {"__call__": __call__})
    return _ONCE[cls]


def _not_blank(cls: type) -> type:
    """A positional argument's action that refuses a blank value, naming the argument."""
    if cls not in _NOT_BLANK:
        def __call__(self, parser, namespace, values, option_string=None):  # noqa: N807 - the Action protocol
            if _blank(values):
                parser.error(f"the {self.metavar or self.dest} is blank: an empty or whitespace-only argument")
            cls.__call__(self, parser, namespace, values, option_string)

        _NOT_BLANK[cls] = type(f"NotBlank{cls.__name__}", (cls,), {"__call__": __call__})
    return _NOT_BLANK[cls]


def checked_numbers(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    for _, action in numeric_actions(parser):
        if action.type in (int, float):
            action.type = RULES.get(action.dest) or _number(action.type, None, None)
    return parser


# the CLI flags (and commands) the shared validators name, and the argument the API takes instead
API_NAMES = {"--judges": "judges", "--metrics": "metrics", "--nli-model": "nli_model",
             "--nli-threshold": "nli_threshold", "--judge-base-url": "judge_base_url", "--judge-model": "judge_model",
             "--judge-max-chars": "judge_max_chars",
             "--ppi-fallback": "ppi_fallback=True", "--ci-lower": "ci_lower=True", "--ppi": "ppi=True",
             "ragdoctor eval --metrics/--judges": "evaluate(..., metrics=..., judges=...)",
             "--concurrency": "generation.concurrency", "--guardrails": "guardrails.enabled"}
_FLAG = re.compile("|".join(re.escape(flag) for flag in sorted(API_NAMES, key=len, reverse=True)) + r"(?![\w-])")


def api_names(message: str) -> str:
    """``message`` with each CLI flag it names spelled as the Python API's argument (``--judges`` -> ``judges``;
    ragdoctor.api and the pytest plugin)."""
    return _FLAG.sub(lambda m: API_NAMES[m.group(0)], message)


def true_or_false(value: object, name: str) -> bool:
    """A flag argument of the Python API or the pytest plugin: True or False only (never 1, "yes" or None), else
    UsageError naming ``name``."""
    if not isinstance(value, bool):
        raise UsageError(f"{name}: must be True or False, got {value!r}")
    return value
