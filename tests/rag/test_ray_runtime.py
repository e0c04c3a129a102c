"""Joining Ray (rag/ray_runtime.py): a private runtime listens on loopback only; an address where nothing answers,
and workers asking for GPUs no node has, are one line at once instead of a wait without end; Ray's many-line,
coloured worker errors become one line with their cause."""
from __future__ import annotations

import time

import pytest

from corpora.errors import UsageError
from rag import ray_runtime as rr


def test_an_address_where_nothing_answers_is_refused_at_once():
    t0 = time.monotonic()
    with pytest.raises(UsageError, match=r"--ray-address 127\.0\.0\.1:1: nothing answers there within 5 s"):
        rr._probe("127.0.0.1:1")
    with pytest.raises(UsageError, match=r"--ray-address ray://127\.0\.0\.1:1: nothing answers"):
        rr._probe("ray://127.0.0.1:1")
    assert time.monotonic() - t0 < 10
    rr._probe("auto")  # Ray finds the running cluster itself


def test_gpus_no_node_has_are_refused():
    class FakeRay:
        @staticmethod
        def nodes():
            return [{"Alive": True, "Resources": {"CPU": 2.0}}, {"Alive": False, "Resources": {"GPU": 8.0}},
                    {"Alive": True, "Resources": {"CPU": 4.0, "GPU": 1.0}}]

    rr.check_gpus(FakeRay, 0.5)
    rr.check_gpus(FakeRay, 1)
    with pytest.raises(UsageError, match=r"--gpus-per-worker 2: no node of the Ray cluster has that many GPUs "
                                         r"\(the most on one node: 1\)"):
        rr.check_gpus(FakeRay, 2)


def test_a_ray_error_becomes_one_line_with_its_cause():
    text = ("\x1b[36mray::_MapWorker.__init__()\x1b[39m (pid=1, ip=127.0.0.1)\n  File \"x.py\", line 3, in f\n"
            "    raise RuntimeError('no model')\nRuntimeError: cannot build judges on this node\n")
    err = rr.worker_failure(Exception(text), "a Ray worker could not judge")
    assert str(err) == "a Ray worker could not judge: RuntimeError: cannot build judges on this node"
    plain = rr.worker_failure(Exception("The actor died unexpectedly before finishing this task.\nmore"), "w")
    assert str(plain) == "w: The actor died unexpectedly before finishing this task."


def test_a_private_runtime_listens_on_loopback_only():
    ray = pytest.importorskip("ray")
    ray.shutdown()
    assert rr.connect(None, num_cpus=1) is True
    try:
        assert ray.get_runtime_context().gcs_address.startswith("127.0.0.1:")
        assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}
    finally:
        ray.shutdown()
    import os

    assert rr.LOOPBACK_ENV not in os.environ  # set for the start only
