"""Joining Ray (a private runtime on this machine, a running cluster, or a Ray client), shared by ``--engine ray``'s
evaluation (eval/ray_engine.py) and indexing (rag/ray_index.py). Ray is imported only when one of them runs."""
from __future__ import annotations

import importlib.util
import logging
import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from corpora.errors import UsageError
from rag.offline import OFFLINE_ENV

__all__ = ["MAX_RESTARTS", "WorkerFailure", "actor_map", "cause_of", "check_address", "connect", "dataset_options",
           "dropped_blocks", "quiet_ray", "ray_module", "ray_session", "worker_env", "worker_failure", "worker_rows"]

MAX_RESTARTS = 3  # a worker that dies (out of memory, a crash) is restarted and its batch retried this often, no more
PROBE_S = 5.0  # how long an --ray-address gets to answer before it is reported as not there
# Ray's own switch (meant for laptops): node addresses on loopback instead of this host's outward address
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
ADDRESS_FORMS = "auto, HOST:PORT (the head's GCS port, 6379 by default) or ray://HOST:PORT (its client server)"
# what a client says first on an HTTP/2 connection (the preface and an empty SETTINGS frame): a gRPC server, as Ray's
# GCS and client server are, answers with a SETTINGS frame of its own
H2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
# how Ray Data logs a block it drops under DataContext.max_errored_blocks (with the task's traceback)
DROPPED = "Ignoring this exception with remaining max_errored_blocks"
EXECUTOR_LOG = "ray.data._internal.execution.streaming_executor_state"
WORKER_DIED = "its worker process died (killed, out of memory or crashed: the Ray session's logs say which)"
# what Ray Data raises, now and then, instead of ActorDiedError when it reads a block the dead worker made (seen with
# a worker dying on every batch: tests/eval/test_ray_engine.py)
_OWNER_UNKNOWN = "trying to access a Ray object whose owner is unknown"


class WorkerFailure(RuntimeError):
    """A Ray worker could not do its work: its constructor raised (judges or a model that cannot load there), or it
    died more than MAX_RESTARTS times. What was already delivered is saved; a rerun resumes."""


def cause_of(exc: BaseException) -> str:
    """``exc`` from Ray (coloured, many lines, the cause deep inside) as one line naming the real cause."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    if type(exc).__name__ in ("ActorUnavailableError", "ActorDiedError") and "creation task" not in text:
        return WORKER_DIED  # Ray's text names RPC sockets, its actor ids and a page of guesses
    if type(exc).__name__ == "OwnerDiedError" or _OWNER_UNKNOWN in text:
        return WORKER_DIED  # a block whose owner, the dead worker's process, is gone: Ray names the object id
    causes = re.findall(r"^\s*((?:[A-Za-z_][\w.]*)?(?:Error|Exception)(?:\([^)]*\))?: .+)$", text, re.M)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return (causes[-1].strip() if causes else (lines[0] if lines else type(exc).__name__))[:300]


def worker_failure(exc: BaseException, what: str) -> WorkerFailure:
    """``exc`` from Ray as one line: ``what`` and the real cause (cause_of)."""
    return WorkerFailure(f"{what}: {cause_of(exc)}")


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
    """Join Ray: ``None`` starts a private runtime on this machine, every process of it listening on loopback only;
    ``auto`` joins the running cluster; ``host:port`` joins that cluster's head, ``ray://host:port`` connects as a
    Ray client (either refused in one line when nothing answers there within PROBE_S). True when this call started
    the connection (the caller shuts it down); False when the process was already connected."""
    ray = ray_module()
    if ray.is_initialized():
        return False
    if address == "local":  # Ray's name for a runtime of its own here: the private one, on loopback
        address = None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # Ray's usage telemetry: off unless the user turned it on
    quiet_ray()
    # log_to_driver off: the workers' output (Ray's notes on retried and killed tasks, libraries' warnings) stays in
    # the session's log files; what a worker raises reaches the driver as an exception, made one line (worker_failure)
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": False,
                              "runtime_env": {"env_vars": worker_env()}, **init_kwargs}
    if address is None:
        kwargs.setdefault("address", "local")
        kwargs.setdefault("_node_ip_address", "127.0.0.1")
    else:
        kwargs["address"] = address
        if address.startswith("ray://"):  # a Ray client takes no node or driver options
            kwargs.pop("include_dashboard", None)
            kwargs.pop("log_to_driver", None)
        _probe(address)
    try:
        with _on_loopback(address is None):
            ray.init(**kwargs)
    except SystemExit as exc:  # ray.init's own SIGTERM handler (sys.exit(15)) while it starts: stop as Ctrl+C does
        if exc.code == signal.SIGTERM:
            raise KeyboardInterrupt from None
        raise
    except (ConnectionError, RuntimeError, ValueError) as exc:
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:240]
        raise UsageError(f"--ray-address {address or '(local)'}: cannot start or join Ray: {why}") from None
    return True


class _Drop(logging.Filter):
    """Drops the records whose message starts with one of ``starts``."""

    def __init__(self, *starts: str):
        super().__init__()
        self.starts = starts

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.starts)


def _drop(logger: str, *starts: str) -> None:
    log = logging.getLogger(logger)
    if not any(isinstance(f, _Drop) and f.starts == starts for f in log.filters):
        log.addFilter(_Drop(*starts))


class _DropDropped(logging.Filter):
    """Keeps Ray Data's record of a block it dropped (a traceback; the driver says it as a result's reason) off the
    console: it still reaches the session's log file."""

    def filter(self, record: logging.LogRecord) -> bool:
        return DROPPED not in str(record.msg)


def _quiet_dropped() -> None:
    for handler in logging.getLogger("ray.data").handlers:
        if not isinstance(handler, logging.FileHandler) and type(handler).__name__ != "SessionFileHandler" and \
                not any(isinstance(f, _DropDropped) for f in handler.filters):
            handler.addFilter(_DropDropped())


def quiet_ray() -> None:
    """Ray's own notes on a run that goes well are not printed on the driver: the note that token authentication is
    on (Ray's default; the warning that it is off is kept), Ray Data's notes (the dataset's start, plan and "execution
    finished" lines, which it logs at INFO, and its warning that progress bars are off: the driver's own bar counts
    what arrives) and the Python warnings Ray's modules give about themselves (deprecations, settings). Ray Data's
    other warnings and its errors, and everything Ray raises, still reach the user (worker_failure: one line); a block
    Ray Data drops (dropped_blocks) is said by the caller, not as Ray Data's traceback. Ray Data's notes stay in its
    log file in the session folder. Calling it again changes nothing."""
    import warnings  # noqa: PLC0415

    ray_module()
    _drop("ray._private.authentication.authentication_token_setup", "Token authentication is enabled")
    _drop("ray.data._internal.progress", "Progress bars disabled")
    for handler in logging.getLogger("ray.data").handlers:  # configured when ray.data is imported: file and console
        if not isinstance(handler, logging.FileHandler) and type(handler).__name__ != "SessionFileHandler":
            handler.setLevel(max(handler.level, logging.WARNING))
    _quiet_dropped()
    _raylet_to_stderr()
    for category in (UserWarning, DeprecationWarning, FutureWarning):
        warnings.filterwarnings("ignore", category=category, module=r"ray(\.|$)")


def _raylet_to_stderr() -> None:
    """The raylet's messages to the driver ("(raylet) A worker died or was killed while executing a task ...") on
    stderr, where Ray 2.60 prints them on stdout (worker.listen_error_messages: is_err False) and so into a report a
    command prints there (``--format json``). Ray's private printer is wrapped once; this is the place to check on a
    Ray upgrade (pinned 2.60)."""
    worker = sys.modules.get("ray._private.worker")
    printer = getattr(worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "_ragdoctor", False):
        return

    def to_stderr(data: dict, ignore_prefix: bool) -> None:
        printer({**data, "is_err": True} if data.get("pid") == "raylet" else data, ignore_prefix)

    to_stderr._ragdoctor = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = to_stderr  # type: ignore[union-attr]


def dataset_options(ds: Any, *, preserve_order: bool, droppable: int = 0) -> Any:
    """``ds`` (its own DataContext, copied when it was made: another dataset's settings do not leak into it) set to
    print nothing while it runs (no progress bars, no start or statistics lines) and to hand each block on as soon as
    it is done (``preserve_order`` False) or in input order (True: a later block waits for the ones before it). Up to
    ``droppable`` blocks whose task failed for good (its worker died past MAX_RESTARTS, or it raised) are dropped
    and the rest goes on (dropped_blocks says why); one more stops the run (worker_rows: one line)."""
    ctx = ds.context
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    ctx.enable_auto_log_stats = False
    ctx.execution_options.preserve_order = preserve_order
    ctx.max_errored_blocks = max(0, droppable)
    return ds


@contextmanager
def dropped_blocks() -> Iterator[list[str]]:
    """While a dataset made with ``droppable`` blocks runs: the cause of each block Ray Data drops, one line each
    (cause_of), in the order they were dropped. A block whose actor is gone for good (ActorDiedError: its restarts
    used up, or its constructor failed on a restart) is not dropped but stops the run, as with nothing droppable: Ray
    Data expects its actors to come back and would wait for that one without end (a pool with no actor left hangs).
    Ray Data only logs the blocks it drops; the cause is read from that record, which is raised instead where the
    actor is gone (a logging filter's exception reaches the caller of ``logger.error``: Ray Data's executor, which
    then stops as it does for a block past the limit). Ray is pinned (2.60): this is the place to check on an
    upgrade."""
    causes: list[str] = []
    gone = ray_module().exceptions.ActorDiedError

    class Catch(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            if DROPPED in str(record.msg):
                exc = record.exc_info[1] if record.exc_info else None
                if isinstance(exc, gone):
                    raise exc
                causes.append(cause_of(exc) if exc is not None else "a Ray task failed")
            return True

    catch = Catch()
    _quiet_dropped()  # also where Ray was started by someone else (no quiet_ray)
    log = logging.getLogger(EXECUTOR_LOG)
    log.addFilter(catch)
    try:
        yield causes
    finally:
        log.removeFilter(catch)


@contextmanager
def _on_loopback(private: bool) -> Iterator[None]:
    """While a private runtime starts: Ray's node address is loopback, not this host's outward address (Ray
    rewrites 127.0.0.1 to it, and its GCS, raylet and workers would listen on every interface). The processes it
    starts inherit the setting; the driver's own check reads Ray's constant, set here for the start only."""
    if not private:
        yield
        return
    ray_constants: Any
    try:
        from ray._private import ray_constants  # noqa: PLC0415 - ray is loaded by now (connect)
    except ImportError:
        ray_constants = None
    before_env, before_const = os.environ.get(LOOPBACK_ENV), getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    os.environ[LOOPBACK_ENV] = "0"
    if ray_constants is not None:
        ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if before_env is None:
            os.environ.pop(LOOPBACK_ENV, None)
        else:
            os.environ[LOOPBACK_ENV] = before_env
        if ray_constants is not None and before_const is not None:
            ray_constants.ENABLE_RAY_CLUSTER = before_const


def _target(address: str) -> tuple[str, int] | None:
    """The host and port ``address`` names (None: "auto", which Ray resolves); UsageError for a form Ray cannot join."""
    if address == "auto":
        return None
    client = address.startswith("ray://")
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if client and not sep and rest and "/" not in rest:
        host, sep, port = rest, ":", "10001"  # a Ray client's default port
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not name.strip() or "/" in host or not (port.isascii() and port.isdigit()) or \
            not 0 < int(port) < 65536:
        raise UsageError(f"--ray-address {address}: not an address Ray can join: give {ADDRESS_FORMS}")
    return name, int(port)


# what Ray's client (ray://) imports beyond ray[data]: the ray[client] extra, not installed with the project's ray extra
CLIENT_NEEDS = "grpc"


def check_address(address: str | None) -> None:
    """UsageError at once (before any input or model is loaded) for an ``--ray-address`` of a form Ray cannot join,
    or a ``ray://`` address without the Ray client installed (Ray would fail only once connecting)."""
    if address not in (None, "local"):
        _target(address)
    if address is not None and address.startswith("ray://") and importlib.util.find_spec(CLIENT_NEEDS) is None:
        raise UsageError(f"--ray-address {address}: a Ray client address needs Ray's client extra, which is not "
                         "installed (pip install 'ray[client]==2.60.0'); or join the head's GCS port, HOST:6379")


def _auto_address() -> tuple[str, str] | None:
    """Where "auto" leads (RAY_ADDRESS, else the address file ``ray start`` writes) and what said so, if anything."""
    env = os.environ.get("RAY_ADDRESS", "").strip()
    if env:
        return env, f"RAY_ADDRESS={env}"
    try:
        from ray._private.utils import read_ray_address  # noqa: PLC0415 - Ray's own lookup (not public)

        found = read_ray_address()
    except Exception:  # noqa: BLE001 - another Ray version: Ray looks for itself
        return None
    return (found, f"the running cluster {found} `ray start` recorded") if found else None


def _probe(address: str) -> None:
    """An address must name a host and port where Ray answers: Ray itself retries for minutes an address where
    nothing answers, or where something else does (the dashboard's port, a web server), printing a line a second.
    Ray's GCS and client server are gRPC servers: a connection to either answers HTTP/2's opening with a SETTINGS
    frame within PROBE_S (not checked where Ray speaks TLS, RAY_USE_TLS). "auto" is checked where it leads."""
    said = address
    target = _target(address)
    if target is None:
        auto = _auto_address()
        if auto is None:
            return  # Ray says in one line that no cluster is running
        found, said = auto[0], f"auto ({auto[1]})"
        try:
            target = _target(found)
        except UsageError:
            return  # a form Ray reads itself
        if target is None:
            return
    host, port = target
    deadline = time.monotonic() + PROBE_S
    try:
        sock = socket.create_connection((host, port), timeout=PROBE_S)
    except (OSError, UnicodeError) as exc:  # UnicodeError: a host name that is no name ("a..b")
        why = getattr(exc, "strerror", None) or type(exc).__name__
        raise UsageError(f"--ray-address {said}: nothing answers there within {PROBE_S:g} s ({why})") from None
    with sock:
        if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
            return
        head = b""
        try:
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            sock.sendall(H2_HELLO)
            while len(head) < 9:
                got = sock.recv(9 - len(head))
                if not got:
                    break
                head += got
        except OSError:  # reset, or silent past the deadline
            pass
    if len(head) < 9 or head[3] != 0x04:
        raise UsageError(f"--ray-address {said}: something answers there, but not Ray (no gRPC server: the "
                         f"dashboard's port?); give {ADDRESS_FORMS}")


def actor_map(ds: Any, fn: Any, *, num_workers: int, gpus_per_worker: float, max_restarts: int = MAX_RESTARTS,
              task_retries: int = MAX_RESTARTS, **kwargs: Any) -> Any:
    """``ds.map_batches`` on a pool of ``num_workers`` actors, one row per call and one call at a time per actor (Ray
    Data's default queues several on each actor, so a block could wait behind a slow one while another actor is
    idle), each batch retried at most ``task_retries`` times and each actor restarted at most ``max_restarts`` times:
    Ray Data's default is without limit, so a batch that kills its worker would loop for ever (and an actor whose
    constructor crashes its process would be restarted for ever). Ray 2.60 takes the limits only through
    ``ray_remote_args`` (deprecated there, with no named replacement yet): its warning is silenced here, and this is
    the one place to change on an upgrade. ``ds`` should be made with one row per block (``override_num_blocks``): a
    block's rows come back together."""
    import warnings  # noqa: PLC0415

    ray = ray_module()
    pool = ray.data.ActorPoolStrategy(size=num_workers, max_tasks_in_flight_per_actor=1)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*ray_remote_args.*deprecated")
        return ds.map_batches(fn, batch_size=1, batch_format="numpy", compute=pool, num_gpus=gpus_per_worker or None,
                              max_restarts=max_restarts, max_task_retries=task_retries, **kwargs)


def worker_rows(ds: Any, what: str) -> Iterator[dict]:
    """The rows of a Ray dataset as each block arrives (no prefetching: ``iter_rows`` holds a finished block back
    until the next one is done); whatever Ray raises for a worker (its constructor failed, it died past MAX_RESTARTS)
    becomes one WorkerFailure line with its cause, ``what`` saying what could not be done."""
    batches = iter(ds.iter_batches(batch_size=None, prefetch_batches=0, batch_format="numpy"))
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except Exception as exc:  # noqa: BLE001 - Ray's many exception types for a worker: one line with the cause
            raise worker_failure(exc, what) from None
        columns = list(batch)
        for values in zip(*(batch[c] for c in columns)):
            yield dict(zip(columns, values))


def check_gpus(ray: Any, gpus_per_worker: float) -> None:
    """Workers asking for more GPUs than any node has would wait for them forever: refused at once."""
    if gpus_per_worker <= 0:
        return
    have = max((float(n.get("Resources", {}).get("GPU", 0)) for n in ray.nodes() if n.get("Alive")), default=0.0)
    if have < gpus_per_worker:
        raise UsageError(f"--gpus-per-worker {gpus_per_worker:g}: no node of the Ray cluster has that many GPUs "
                         f"(the most on one node: {have:g})")


def _terminated(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def data_executors() -> list[threading.Thread]:
    """The Ray Data executors running in this process: Ray Data names each one's thread
    ``StreamingExecutor-<dataset>``, and the thread is the executor (it has ``shutdown``)."""
    return [t for t in threading.enumerate()
            if t.name.startswith("StreamingExecutor-") and callable(getattr(t, "shutdown", None))]


def stop_data_executors(within: float = 10.0, *, spare: Sequence[threading.Thread] = ()) -> list[str]:
    """Shut down the Ray Data executors running in this process, but those in ``spare`` (running before a session
    began: someone else's), and wait for their threads (``within`` seconds in all); the names of those still alive
    after that. A stream interrupted mid-run (Ctrl+C, SIGTERM) can leave its
    executor's scheduling thread going: when such a thread reaches Ray after ``ray.shutdown()``, Ray's core ends the
    whole process with status 1 ("The core worker has already been shutdown"), before the run's one-line stop and its
    exit status 130. Each is shut down with ``shutdown(force=True)``, as Ray Data's own iterator does when it is closed;
    a shutdown that fails is left to Ray."""
    deadline = time.monotonic() + within
    executors = [t for t in data_executors() if t not in spare]
    for t in executors:
        try:
            t.shutdown(force=True)  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001, S110 - Ray's own cleanup: nothing more to do here than wait
            pass
    for t in executors:
        t.join(max(0.0, deadline - time.monotonic()))
    return [t.name for t in executors if t.is_alive()]


@contextmanager
def ray_session(address: str | None, init: dict[str, Any], gpus_per_worker: float = 0.0) -> Iterator[Any]:
    """``ray`` connected (see ``connect``) and able to place the workers' GPUs; shut down on exit when started
    here. Meanwhile a SIGTERM (a supervisor, ``kill``) stops the work as Ctrl+C does (KeyboardInterrupt: what was
    made is kept, Ray is shut down), where Ray's own handler would exit at once with status 15 and a crash report."""
    ray = ray_module()
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None
    started = False
    others = data_executors()
    try:
        started = connect(address, **init)
        if main:
            signal.signal(signal.SIGTERM, _terminated)
        check_gpus(ray, gpus_per_worker)
        yield ray
    finally:
        try:
            stop_data_executors(spare=others)  # before Ray goes: a thread of theirs reaching it after ends the process
            if started:
                ray.shutdown()
        finally:
            if main:
                signal.signal(signal.SIGTERM, before if before is not None else signal.SIG_DFL)
