"""Environment every entry point sets before heavy imports: offline hubs, no telemetry, calm OpenMP."""
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


def set_offline_env() -> None:
    """Set the variables that keep the stack offline; values the user set explicitly win."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
