"""Joining Ray (rag/ray_runtime.py): a private runtime listens on loopback only; an address where nothing answers,
and workers asking for GPUs no node has, are one line at once instead of a wait without end; Ray's many-line,
coloured worker errors become one line with their cause."""
from __future__ import annotations

import re
import socket
import threading
import time
from contextlib import contextmanager

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


def test_a_block_whose_worker_died_reads_as_the_worker_died():
    """Ray Data sometimes raises, instead of ActorDiedError, a ValueError about the block a dead worker made (its
    owner): the cause is the same, said the same way."""
    owner = ValueError("An application is trying to access a Ray object whose owner is unknown(00ffffffffffffffffff"
                       "ffffffffffffffffffffff0100000005e1f505). Please make sure that all Ray objects you are trying "
                       "to access are part of the current Ray session.")
    assert str(rr.worker_failure(owner, "w")) == f"w: {rr.WORKER_DIED}"
    assert str(rr.worker_failure(ValueError("a judge's own ValueError: bad input"), "w")) == \
        "w: a judge's own ValueError: bad input"


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


@contextmanager
def server(reply: bytes | None):
    """A server on loopback that answers each connection with ``reply`` (None: says nothing until closed)."""
    sock = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        sock.settimeout(0.1)
        held = []
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            held.append(conn)
            if reply is not None:
                conn.sendall(reply)
        for conn in held:
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        sock.close()


H2_SETTINGS = b"\x00\x00\x06\x04\x00\x00\x00\x00\x00" + b"\x00\x03\x00\x00\x00\x64"  # what a gRPC server says first


def test_an_address_where_something_else_answers_is_refused_at_once(monkeypatch):
    """The dashboard's port (8265) or any web server answers TCP: Ray then retried for minutes, a warning a second
    (measured: over two minutes, then killed). A Ray GCS or client server speaks gRPC: its SETTINGS frame passes."""
    monkeypatch.setattr(rr, "PROBE_S", 1.0)
    t0 = time.monotonic()
    with server(b"HTTP/1.0 400 Bad Request\r\n\r\n") as port:
        with pytest.raises(UsageError, match=rf"--ray-address 127\.0\.0\.1:{port}: something answers there, but not "
                                             r"Ray \(no gRPC server: the dashboard's port\?\); give auto, HOST:PORT"):
            rr._probe(f"127.0.0.1:{port}")
        with pytest.raises(UsageError, match="something answers there, but not Ray"):
            rr._probe(f"ray://127.0.0.1:{port}")
        monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")  # "auto" is checked where it leads
        with pytest.raises(UsageError, match=rf"--ray-address auto \(RAY_ADDRESS=127\.0\.0\.1:{port}\): something"):
            rr._probe("auto")
        monkeypatch.delenv("RAY_ADDRESS")
    with server(None) as port, pytest.raises(UsageError, match="something answers there, but not Ray"):
        rr._probe(f"127.0.0.1:{port}")  # silent
    assert time.monotonic() - t0 < 8
    with server(H2_SETTINGS) as port:
        rr._probe(f"127.0.0.1:{port}")
        monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
        rr._probe("auto")


@pytest.mark.parametrize("address", [":6379", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:0", "http://127.0.0.1:1",
                                     "garbage", "ray://", "[]:6379", "127.0.0.1:port"])
def test_an_address_of_no_form_ray_joins_is_one_line_before_anything_loads(address, monkeypatch):
    """Ray logged a traceback for ':6379' (Malformed host), named another host for '127.0.0.1:' and probed
    'http://...' as a host name: now each is one line at once, when the engine is made."""
    from eval.ray_engine import RayEngine
    from rag.ray_index import RayDense

    message = rf"--ray-address {re.escape(address)}: not an address Ray can join: give auto, HOST:PORT"
    with pytest.raises(UsageError, match=message):
        rr._probe(address)
    with pytest.raises(UsageError, match=message):
        RayEngine(lambda: None, address=address)  # type: ignore[arg-type,return-value]
    with pytest.raises(UsageError, match=message):
        RayDense("fake", address=address)
    monkeypatch.setattr(rr, "CLIENT_NEEDS", "json")  # as if the Ray client were installed
    for fine in ("auto", "local", "head:6379", "ray://head", "ray://head:10001", "[::1]:6379", None):
        rr.check_address(fine)


def test_a_ray_client_address_without_the_ray_client_is_one_line_before_anything_loads(monkeypatch):
    """ray:// needs grpc (Ray's client extra), which the project's ray extra does not install: said at once, not as
    an import error once Ray connects."""
    monkeypatch.setattr(rr, "CLIENT_NEEDS", "ragdoctor_no_such_module")
    with pytest.raises(UsageError, match=r"^--ray-address ray://head:10001: a Ray client address needs Ray's client "
                                         r"extra, which is not installed \(pip install 'ray\[client\]==2.60.0'\)"):
        rr.check_address("ray://head:10001")
    rr.check_address("head:6379")  # the GCS port needs no client


def test_local_is_the_private_runtime_on_loopback():
    """`--ray-address local` (Ray's name for a runtime of its own) started one on this host's outward address."""
    ray = pytest.importorskip("ray")
    ray.shutdown()
    assert rr.connect("local", num_cpus=1) is True
    try:
        assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}
    finally:
        ray.shutdown()


def test_the_raylets_messages_reach_stderr_not_the_report_on_stdout(capsys):
    """Ray 2.60 prints "(raylet) A worker died ..." on the driver's stdout, into a report printed there (--format
    json); after quiet_ray it is on stderr, and a worker's own output is where Ray puts it."""
    pytest.importorskip("ray")
    rr.quiet_ray()
    rr.quiet_ray()  # wrapped once
    from ray._private import worker

    worker.print_to_stdstream({"lines": ["A worker died or was killed while executing a task."], "pid": "raylet",
                               "is_err": False}, ignore_prefix=False)
    worker.print_to_stdstream({"lines": ["a line the worker printed"], "pid": 4242, "ip": "127.0.0.1",
                               "is_err": False, "task_name": "t", "actor_name": ""}, ignore_prefix=False)
    out, err = capsys.readouterr()
    assert "A worker died" in err and "A worker died" not in out
    assert "a line the worker printed" in out


def test_ray_datas_executors_still_running_are_shut_down_and_waited_for_before_ray_goes():
    """A stream interrupted mid-run can leave Ray Data's scheduling thread going; if it reaches Ray after
    ray.shutdown(), Ray's core ends the process with status 1 instead of the run's one-line stop (seen once in CI on
    SIGTERM). stop_data_executors shuts such threads down as Ray Data's own iterator does and waits for them; other
    threads are left alone, and one that does not stop in time is named."""
    stop, calls = threading.Event(), []

    class Executor(threading.Thread):
        def __init__(self, name, stops=True):
            super().__init__(name=name, daemon=True)
            self.stops = stops

        def run(self):
            (stop if self.stops else threading.Event()).wait(30 if self.stops else 3)

        def shutdown(self, force, exception=None):
            calls.append((self.name, force))
            if self.stops:
                stop.set()

    other = threading.Thread(target=stop.wait, args=(30,), name="not-an-executor", daemon=True)
    running = [Executor("StreamingExecutor-ds1"), Executor("StreamingExecutor-ds2")]
    for t in [*running, other]:
        t.start()
    assert rr.stop_data_executors(within=5) == []
    assert sorted(calls) == [("StreamingExecutor-ds1", True), ("StreamingExecutor-ds2", True)]
    assert not any(t.is_alive() for t in running)
    stuck = Executor("StreamingExecutor-ds3", stops=False)
    stuck.start()
    assert rr.stop_data_executors(within=0.2) == ["StreamingExecutor-ds3"]
    calls.clear()
    assert rr.stop_data_executors(within=0.2, spare=[stuck]) == [] and calls == []  # running before: someone else's
