"""Joining Ray (a private runtime on this machine, a running cluster, or a Ray client), shared by ``--engine ray``'s
evaluation (eval/ray_engine.py) and indexing (rag/ray_index.py). Ray is imported only when one of them runs."""
from __future__ import annotations

import logging
import os
from typing import Any

from corpora.errors import UsageError
from rag.offline import OFFLINE_ENV

__all__ = ["connect", "ray_module", "worker_env"]


def ray_module() -> Any:
    """``ray``, or UsageError saying how to install it."""
    try:
        import ray  # noqa: PLC0415 - lazy: only --engine ray loads Ray
        import ray.data  # noqa: F401, PLC0415
    except ImportError:
        raise UsageError("--engine ray needs Ray: pip install 'ragdoctor[ray]' (or ray[data])") from None
    return ray


def worker_env() -> dict[str, str]:
    """The environment every Ray worker runs with: offline hubs, no telemetry (values set here win)."""
    env = {k: os.environ.get(k, v) for k, v in OFFLINE_ENV.items()}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    return env


def connect(address: str | None = None, **init_kwargs: Any) -> bool:
    """Join Ray: ``None`` starts a private runtime on this machine, ``auto`` joins the running cluster,
    ``ray://host:port`` connects as a Ray client. True when this call started the connection (the caller shuts it
    down); False when the process was already connected."""
    ray = ray_module()
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # Ray's usage telemetry: off unless the user turned it on
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING,
                              "runtime_env": {"env_vars": worker_env()}, **init_kwargs}
    if address is None:
        kwargs.setdefault("address", "local")
    else:
        kwargs["address"] = address
        if address.startswith("ray://"):  # a Ray client takes no node options
            kwargs.pop("include_dashboard", None)
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:240]
        raise UsageError(f"--ray-address {address or '(local)'}: cannot start or join Ray: {why}") from None
    return True
