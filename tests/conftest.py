"""Shared fixtures. Every test runs offline: a socket to anything but loopback raises, in this process and in
every Python subprocess a test starts (through tests/netguard/sitecustomize.py)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NETGUARD = Path(__file__).parent / "netguard"
SHARED_DATA = ROOT.parent / "shared" / "data"

sys.path.insert(0, str(NETGUARD))
import ragdoctor_netguard  # noqa: E402

ragdoctor_netguard.install()
os.environ["RAGDOCTOR_NETGUARD"] = "1"
os.environ["PYTHONPATH"] = os.pathsep.join([str(NETGUARD), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
from rag.offline import set_offline_env  # noqa: E402

set_offline_env()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Embedding caches and joined models live in one cache per test session, never in the user's home."""
    cache = os.environ.get("RAGDOCTOR_TEST_CACHE") or str(tmp_path_factory.getbasetemp() / "cache")
    monkeypatch.setenv("RAGDOCTOR_CACHE", cache)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"human-labelled dev data not found at {SHARED_DATA} (see README, Tests: Development data)")
    return SHARED_DATA


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray runtime on loopback for one test module (2 CPUs, no dashboard)."""
    ray = pytest.importorskip("ray")
    ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, address="local", logging_level="WARNING")
    yield
    ray.shutdown()


@pytest.fixture
def two_nodes(monkeypatch):
    """A head and a worker node on this machine, one CPU each, every address on loopback (Ray would rewrite
    127.0.0.1 to this host's outward address, which the tests' network guard refuses)."""
    ray = pytest.importorskip("ray")
    import ray._private.services as services  # noqa: PLC0415 - ray is an extra: only the Ray tests import it
    from ray.cluster_utils import Cluster  # noqa: PLC0415

    monkeypatch.setattr(services, "resolve_ip_for_localhost", lambda host: host)
    ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False,
                                                            "node_ip_address": "127.0.0.1"})
    cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
    ray.init(address=cluster.address, logging_level="WARNING")
    cluster.wait_for_nodes()
    yield cluster
    ray.shutdown()
    cluster.shutdown()
