"""The environment that keeps ragdoctor's stack offline: no hub downloads, no telemetry, calm OpenMP.

Nothing is set on import. Each entry point sets it before the libraries that read it load: the CLI, the dashboard
and bench/ when they start; the Python API (ragdoctor/api.py) on its first call that runs work (evaluate, and the
Pipeline's index, ask and run), never on ``import ragdoctor``; Ray workers through their runtime_env. Values the
user set explicitly win. Most of these are read once, when the library that reads them is imported (the hub's
offline mode when huggingface_hub loads), so they stay set for the rest of the process. The guarantee does not rest
on them alone: every model ragdoctor loads is a local folder loaded with ``local_files_only=True``."""
from __future__ import annotations

import os

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "RAGAS_DO_NOT_TRACK": "true",
    "NEMO_GUARDRAILS_NO_USAGE_STATS": "1",
    "OMP_WAIT_POLICY": "PASSIVE",
    "TOKENIZERS_PARALLELISM": "false",
    "ANONYMIZED_TELEMETRY": "False",
    "DO_NOT_TRACK": "1",
    "LANGCHAIN_TRACING_V2": "false",
}


def set_offline_env() -> list[str]:
    """Set the variables that keep the stack offline; values the user set explicitly win (even an empty one).
    Returns the names set now (none when every one was already set), so a caller can say what it changed."""
    unset = [key for key in OFFLINE_ENV if key not in os.environ]
    for key in unset:
        os.environ[key] = OFFLINE_ENV[key]
    return unset
