"""Pipeline configuration: pydantic models that reject unknown keys, loaded from one TOML file,
overridable by environment variables (``RAGDOCTOR_<SECTION>__<KEY>``) and CLI flags."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tomllib
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from corpora.errors import InputError
from corpora.jsonl import validation_error
from corpora.paths import input_file
from rag.fleet import public_url, redact_urls
from rag.guardrails.settings import GuardrailsConfig

IndexKind = Literal["flat", "ivf", "hnsw", "ivfpq", "sq8"]
RetrievalMode = Literal["dense", "bm25", "hybrid"]
FusionKind = Literal["rrf", "minmax", "zscore"]
MAX_SECONDS = 86400.0  # the longest wait a setting may ask for (a day): 1e308 s overflows the clock in each request


def _holds_text(annotation: Any) -> bool:
    """Whether a field holds a string (a path, a model name, a URL): ``str``, ``str | None``..."""
    return annotation is str or str in get_args(annotation)


def _number_not_bool(annotation: Any) -> bool:
    """Whether a field holds a number and cannot hold a bool (``int``, ``float``, ``int | None``...)."""
    kinds = set(get_args(annotation)) or {annotation}
    return bool(kinds & {int, float}) and bool not in kinds


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        """``top_k = true`` is a mistake, not 1: pydantic would read a bool as a number."""
        field = cls.model_fields.get(info.field_name or "")
        if isinstance(value, bool) and field is not None and _number_not_bool(field.annotation):
            raise ValueError("must be a number, not true or false")
        if isinstance(value, str) and not value.strip() and field is not None and _holds_text(field.annotation):
            raise ValueError("is blank")  # corpus = "" (or RAGDOCTOR_CORPUS=) would read the current folder
        return value


class ChunkingConfig(_Strict):
    chunk_size: int = Field(128, ge=16, le=4096, description="tokens per chunk (embedder's tokenizer)")
    chunk_overlap: int = Field(16, ge=0, le=1024)

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size "
                             f"({self.chunk_size})")
        return self


class EmbeddingConfig(_Strict):
    model: str = Field("minilm", description="'minilm' (bundled), 'fake' (tests) or a sentence-transformers folder")
    batch_size: int = Field(32, ge=1)
    device: str = Field("auto", description="'auto', 'cpu' or 'cuda'")
    backend: Literal["torch", "torch-bf16"] = Field(
        "torch", description="'torch' (fp32) or 'torch-bf16' (bf16 autocast: ~3x on CPUs with AMX/AVX512-BF16, "
        "checked against fp32 before use; rag/embedding_backends.py); an index is queried with the backend it was "
        "built with")


BM25_K1, BM25_B = 0.9, 0.4  # Anserini's BM25 setting (its BEIR baselines), not fitted here: bench/retrieval_default.py
BM25_LEGACY = {"bm25_k1": 1.5, "bm25_b": 0.75}  # bm25s' Lucene defaults: what an index before session 21 was built with


class IndexConfig(_Strict):
    kind: IndexKind = "flat"
    nlist: int = Field(64, ge=1, description="IVF lists (capped by corpus size)")
    nprobe: int | None = Field(None, ge=1, description="IVF lists probed per query; None: max(8, ceil(nlist / 4)) "
                               "(rag/faiss_index.default_nprobe)")
    hnsw_m: int = Field(32, ge=4)
    ef_search: int = Field(64, ge=1)
    pq_bits: int = Field(8, ge=1, le=8)
    refine: Literal["none", "sq8", "flat"] = Field("sq8", description="IVF-PQ: re-rank k_factor * k candidates with "
                                                   "8-bit (sq8) or exact float (flat, IndexRefineFlat) vectors")
    refine_k_factor: int = Field(4, ge=1, description="IVF-PQ refine: candidates re-ranked per result")
    use_gpu: Literal["auto", "never"] = "auto"
    on_disk: bool = Field(False, description="IVF kinds: inverted lists in one file mmapped at load, not read into "
                          "memory (faiss OnDiskInvertedLists; rag/ondisk_index.py)")
    bm25_k1: float = Field(BM25_K1, gt=0.0, le=10.0, description="BM25 term-frequency saturation (rag/bm25.py)")
    bm25_b: float = Field(BM25_B, ge=0.0, le=1.0, description="BM25 document-length normalisation (0: none, 1: full)")
    bm25_language: str = Field("auto", description="BM25 stemmer and stopwords: 'auto' (the corpus's dominant "
                               "language, rag/bm25_language.py), 'none' or a Snowball language ('german', ...)")

    @field_validator("bm25_language")
    @classmethod
    def _bm25_language(cls, value: str) -> str:
        from rag.bm25_language import check_language  # noqa: PLC0415 - PyStemmer only where BM25 is configured

        return check_language(value)

    @model_validator(mode="after")
    def _on_disk_fits(self) -> IndexConfig:
        if self.on_disk:
            from rag.ondisk_index import on_disk_refusal  # noqa: PLC0415 - the reasons live with the mechanism

            why = on_disk_refusal(self.kind, self.refine)
            if why:
                raise ValueError(why)
        return self

    def hash_fields(self) -> dict[str, Any]:
        """The settings as the pipeline's config hash sees them: the refine keys only for IVF-PQ, and an unset nprobe
        as the former default 8 for the kinds it does not apply to, so a flat, HNSW or SQ8 run keeps the hash it had
        before these keys existed (an IVF run's hash changes: its default search changed); the BM25 keys only where
        they differ from the values used before they existed; never ``on_disk``."""
        data = self.model_dump(exclude={"on_disk"})  # where the lists live changes no result
        for key, legacy in BM25_LEGACY.items():
            if data[key] == legacy:  # at the values every index had before the keys existed: the hash it had then
                data.pop(key)
        if data["bm25_language"] == "auto":  # the default: the hash it had before the key existed
            data.pop("bm25_language")
        if self.kind != "ivfpq":
            data.pop("refine"), data.pop("refine_k_factor")
        if self.nprobe is None and self.kind not in ("ivf", "ivfpq"):
            data["nprobe"] = 8
        return data


class RetrievalConfig(_Strict):
    mode: RetrievalMode = "hybrid"
    top_k: int = Field(4, ge=1, description="chunks given to the generator")
    candidate_k: int = Field(20, ge=1, description="candidates per retriever before fusion")
    rrf_k: int = Field(60, ge=1)
    fusion: FusionKind = Field("zscore", description="hybrid: 'rrf' (reciprocal rank fusion), or a convex combination "
                               "of min-max ('minmax') or z-score ('zscore') normalised dense and BM25 scores")
    dense_weight: float = Field(0.5, ge=0.0, le=1.0, description="minmax/zscore fusion: the dense share (BM25 gets "
                                "the rest)")
    rerank: bool = Field(True, description="rerank the first stage's best rerank_depth chunks with a cross-encoder")
    reranker: str = Field("rerank-minilm", description="'rerank-minilm' (bundled, trained to rank), "
                          "'relevance-minilm' (the judge's relevance model) or a CrossEncoder folder")
    rerank_depth: int = Field(20, ge=1, le=1000, description="first-stage chunks the reranker reads")
    rerank_weight: float = Field(0.25, ge=0.0, le=1.0, description="1: order by the reranker alone; below 1: by "
                                 "(1 - w) * first-stage + w * reranker score, both min-max normalised (0.25: "
                                 "the best share on SciFact train, README)")
    rerank_max_length: int = Field(160, ge=32, le=512, description="tokens of a (chunk, question) pair it reads "
                                   "(160: the length the bundled reranker was trained at)")
    context_tokens: int | None = Field(None, ge=32, description="a token budget for the chunks given to the "
                                       "generator instead of top_k: ranked chunks that fit whole, in rank order "
                                       "(rag/context_budget.py); None: the top_k chunks")

    def unset_keys(self) -> set[str]:
        """Keys left out of the config hash because they are at the behaviour from before they existed."""
        out = set()
        if self.context_tokens is None:
            out.add("context_tokens")
        if self.fusion == "rrf":
            out |= {"fusion", "dense_weight"}
        if not self.rerank:
            out |= {"rerank", "reranker", "rerank_depth", "rerank_weight", "rerank_max_length"}
        return out


def http_url(url: str) -> str:
    """An OpenAI-compatible server's URL, as given (it is part of the config hash: a resumed run must find its traces);
    ValueError when it is no http(s) URL with a host and a valid port (a malformed one would fail every question, or
    crash the client), quoting it without its password."""
    from urllib.parse import urlsplit  # noqa: PLC0415

    text = url.strip()
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number in range
    except ValueError as exc:
        raise ValueError(redact_urls(f"not a valid URL ({exc}): {url!r}")) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(redact_urls(f"must be an http(s) URL such as http://127.0.0.1:8000/v1, got {url!r}"))
    return url


class GenerationConfig(_Strict):
    base_url: str | list[str] | None = Field(None, description="OpenAI-compatible URL, or a list of them (a fleet: "
                                             "round-robin); None starts the bundled model")
    model: str = Field("qwen2.5-0.5b", description="bundled GGUF name/path, or the server's model name")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(160, ge=1)
    seed: int = 0
    n_ctx: int = Field(4096, ge=512)
    # how requests are sent, not what they answer: left out of the config hash (RUNTIME_ONLY)
    concurrency: int = Field(1, ge=1, le=1024, description="questions answered at once (the bundled model gets as "
                                                              "many parallel slots)")
    timeout: float = Field(300.0, gt=0, le=MAX_SECONDS, description="seconds a request may take in all (its whole "
                           "reply)")
    max_retries: int = Field(1, ge=0, le=100, description="retries of a request on 429, 5xx and connection errors")

    @field_validator("base_url")
    @classmethod
    def _urls(cls, value: str | list[str] | None) -> str | list[str] | None:
        if value is None:
            return None
        urls = [http_url(u) for u in ([value] if isinstance(value, str) else value)]
        if not urls:
            raise ValueError("an empty list of URLs (leave it out for the bundled model)")
        return value

    def hash_fields(self) -> dict[str, Any]:
        """Where the model is and what it is, as the config hash sees them: what was written, except
        - a GGUF file of the user's (no base_url): named by its content, ``gguf@sha256:<12 hex>``: a file replaced at
          the same path answers differently, and the same file moved answers the same; the bundled names keep their
          hash (their files are verified against pinned sums);
        - a fleet (a list of URLs): ``<fleet>``, not its endpoints: every node answers any question of one run, so a
          fleet is one model by construction (the model name says which); dropping a dead node, adding one or
          reordering them changes no answer. One URL stays in the hash as written (the hash it always had: a server
          that ignores the model name is told apart by its URL alone);
        - a URL's user and password: left out (rag.fleet.public_url): a secret never reaches a run folder's name, and
          a changed password re-answers nothing."""
        out: dict[str, Any] = {}
        if isinstance(self.base_url, list):
            out["base_url"] = "<fleet>"
        elif self.base_url is not None:
            out["base_url"] = public_url(self.base_url)
        else:
            from rag.models import GGUF_MODELS  # noqa: PLC0415 - lazy: the registry, only for the bundled server

            if self.model not in GGUF_MODELS and Path(self.model).expanduser().is_file():
                from rag.models import gguf_tag  # noqa: PLC0415 - lazy: hashing a file, only for a file of the user's

                with contextlib.suppress(OSError):  # unreadable: starting the server says so, in one line
                    out["model"] = f"gguf@sha256:{gguf_tag(self.model)}"
        return out

    def urls(self) -> list[str]:
        """The endpoints ([] for the bundled model)."""
        return [] if self.base_url is None else [self.base_url] if isinstance(self.base_url, str) else \
            list(self.base_url)


RUNTIME_ONLY = {"concurrency", "timeout", "max_retries"}  # generation settings that change no answer


class PipelineConfig(_Strict):
    corpus: str = Field("bundled", description="'bundled', a JSONL file, a BEIR folder or a folder of .txt/.md")
    questions: str = Field("bundled", description="'bundled' or a question-set JSONL")
    index_dir: str = ".ragdoctor/index"
    chunking: ChunkingConfig = ChunkingConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    index: IndexConfig = IndexConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    generation: GenerationConfig = GenerationConfig()
    guardrails: GuardrailsConfig = GuardrailsConfig()

    @model_validator(mode="after")
    def _budget_fits(self) -> PipelineConfig:
        budget = self.retrieval.context_tokens
        if budget is None:
            return self
        if budget + self.generation.max_tokens >= self.generation.n_ctx:
            raise ValueError(f"retrieval.context_tokens ({budget}) plus generation.max_tokens "
                             f"({self.generation.max_tokens}) must be below generation.n_ctx "
                             f"({self.generation.n_ctx}): the prompt and the answer would not fit")
        return self

    def config_hash(self) -> str:
        """Short hash of everything that changes an answer (paths to where things are written excluded)."""
        exclude: dict = {k: True for k in {"index_dir", "questions"} | (set() if self.guardrails.enabled
                                                                         else {"guardrails"})}
        exclude["generation"] = RUNTIME_ONLY
        exclude["retrieval"] = self.retrieval.unset_keys()  # at their former behaviour: the hash they had before
        if self.embedding.backend == "torch":  # the fp32 default: the same hash as before the key existed
            exclude["embedding"] = {"backend"}
        data = self.model_dump(exclude=exclude)  # rails off: the same hash as before the section existed
        data["index"] = self.index.hash_fields()
        data["generation"].update(self.generation.hash_fields())
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]


ENV_PREFIX = "RAGDOCTOR_"


def _env_overrides(environ: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in environ.items():
        if not key.startswith(ENV_PREFIX):
            continue
        path = key[len(ENV_PREFIX):].lower().split("__")
        if path[0] not in PipelineConfig.model_fields:
            if len(path) > 1:  # SECTION__KEY is a setting's path: a misspelled section would be ignored
                tables = [n for n, f in PipelineConfig.model_fields.items() if _is_table(f)]
                raise InputError(None, f"environment variable {key}: unknown section '{path[0]}' (sections: "
                                       f"{', '.join(tables)})")
            continue  # RAGDOCTOR_CACHE and the like: not pipeline settings
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise InputError(None, f"environment variable {key} conflicts with {ENV_PREFIX}{part.upper()}: a "
                                       "section cannot also be a value")
        if isinstance(node.get(path[-1]), dict):
            raise InputError(None, f"environment variable {key} conflicts with the variables of its sub-keys")
        node[path[-1]] = value
    return out


def _is_table(field: Any) -> bool:
    return isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for k, v in over.items():
        merged[k] = _merge(merged[k], v) if isinstance(v, dict) and isinstance(merged.get(k), dict) else v
    return merged


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None,
                environ: dict[str, str] | None = None, *, source: str | None = None) -> PipelineConfig:
    """File (TOML, optional ``[pipeline]`` table) < environment < explicit overrides (CLI flags, or the API's dict);
    ``source`` names the overrides in an error when no file is given."""
    data: dict[str, Any] = {}
    source = str(path) if path else (source or "<config>")
    if path is not None:
        p = input_file(path)
        try:
            data = tomllib.loads(p.read_bytes().decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise InputError(p, f"not valid UTF-8 (byte {exc.start})") from None
        except tomllib.TOMLDecodeError as exc:
            raise InputError(p, f"malformed TOML: {exc}") from None
        if "pipeline" in data:  # a [pipeline] table: nothing else at the top but other tools' [tool.*] tables
            beside = sorted(set(data) - {"pipeline", "tool"})
            if beside:
                raise InputError(p, f"{', '.join(beside)}: outside the [pipeline] table, which holds every setting "
                                    f"(move it inside or remove it)")
            data = data["pipeline"]
        if not isinstance(data, dict):
            raise InputError(p, "[pipeline] must be a table")
    from_env = _env_overrides(dict(os.environ if environ is None else environ))
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    data = _merge(_merge(data, from_env), given)
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:  # named by where the bad value came from: a flag or the API's dict, the
        loc = [str(p) for p in exc.errors()[0]["loc"]]  # environment, else the file
        where = source if _holds(given, loc) or not _holds(from_env, loc) else \
            f"environment variable {ENV_PREFIX}{'__'.join(loc[:2]).upper()}"
        raise validation_error(where, None, exc) from None


def _holds(tree: dict[str, Any], loc: list[str]) -> bool:
    """Whether a nested dict sets the value at ``loc`` (or the section holding it)."""
    node: Any = tree
    for part in loc:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def set_path(overrides: dict[str, Any], dotted: str, value: Any) -> None:
    """Put ``value`` at ``a.b`` in a nested override dict, skipping ``None`` (flag not given)."""
    if value is None:
        return
    node = overrides
    *parents, leaf = dotted.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = value
