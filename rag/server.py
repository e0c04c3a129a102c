"""The bundled GGUF model, served on loopback by xllamacpp (llama.cpp's server, in-process).

How xllamacpp behaves (found by experiment, xllamacpp 2026.10.11549):
- ``xllamacpp.Server(params)`` loads the model and starts listening before it returns; it raises
  ``RuntimeError("Failed to init server ...")`` for a bad file or a busy port. There is no stop
  method: dropping the last reference runs the C++ destructor, which stops the HTTP server, joins
  its threads and closes the listening socket.
- Destroying a Server whose main loop has not yet started hangs forever (a lost wake-up). So
  ``start()`` sends one task through the loop (``handle_metrics()``) before it returns, which
  guarantees ``stop()`` can complete.
- Destroying a Server while a request is in flight deadlocks: the destructor holds the GIL while
  it joins an HTTP worker that waits for a result the stopped loop never sends, so an in-process
  client thread can never time out. ``stop()`` therefore first drains: it waits until the
  metrics report no request processing or deferred (a request whose client went away is
  cancelled by llama.cpp within moments), and refuses to stop if that takes over ``drain_timeout``.
"""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from rag.llm import ChatLLM, LLMError, OpenAIChatLLM
from rag.models import DEFAULT_GGUF, GGUF_MODELS, gguf_path, gguf_tag


class LocalModelServer:
    """Serve a GGUF model over the OpenAI API on ``host`` (loopback by default).

    ``n_ctx`` is the context of one request; the server holds ``n_ctx * parallel`` in total so
    that each of the ``parallel`` slots gets the full window.
    """

    def __init__(
        self,
        gguf: str | Path = DEFAULT_GGUF,
        *,
        n_ctx: int = 4096,
        threads: int = 2,
        port: int = 0,
        host: str = "127.0.0.1",
        parallel: int = 1,
        verbose: bool = False,
        ready_timeout: float = 60.0,
    ) -> None:
        self.gguf = gguf
        self.n_ctx = n_ctx
        self.threads = threads
        self.port = port
        self.host = host
        self.parallel = parallel
        self.verbose = verbose
        self.ready_timeout = ready_timeout
        self.start_s: float | None = None
        self._server: Any = None
        self._base_url: str | None = None

    @property
    def name(self) -> str:
        """The model name the server announces: the registry name, or the file's stem."""
        key = str(self.gguf)
        return key if key in GGUF_MODELS else Path(key).stem

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1`` of the running server."""
        if self._base_url is None:
            raise LLMError("LocalModelServer is not running: call start() first")
        return self._base_url

    @property
    def running(self) -> bool:
        """True between a successful ``start()`` and ``stop()``."""
        return self._server is not None

    def start(self) -> str:
        """Load the model, start serving, wait until it answers, and return the base URL."""
        if self._server is not None:
            return self.base_url
        began = time.perf_counter()
        path = gguf_path(self.gguf)
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before libgomp is loaded by the import
        import xllamacpp  # noqa: PLC0415 - lazy: the bundled model server, only when it is started

        try:
            server = xllamacpp.Server(self._params(xllamacpp, path))
        except RuntimeError as exc:
            raise LLMError(f"could not start llama.cpp server for {path.name} on {self.host}:{self.port}: "
                           f"{exc}") from None
        server.handle_metrics()  # one task through the main loop: see the module docstring
        self._server = server
        address = str(server.listening_address).rstrip("/")
        try:
            _wait_healthy(address, self.ready_timeout)
        except LLMError:
            self.stop()
            raise
        self._base_url = address + "/v1"
        self.start_s = time.perf_counter() - began
        return self._base_url

    def busy(self) -> bool:
        """True while the server processes or queues a request (from its metrics)."""
        if self._server is None:
            return False
        metrics = str(self._server.handle_metrics())
        return any(_gauge(metrics, name) > 0 for name in ("requests_processing", "requests_deferred"))

    def stop(self, drain_timeout: float = 120.0) -> None:
        """Wait for in-flight requests, then stop the server, join its threads and free the port.

        A no-op when not running. Raises ``LLMError`` (leaving the server running, so ``stop()``
        can be retried) when requests are still in flight after ``drain_timeout`` seconds.
        """
        if self._server is None:
            return
        deadline = time.monotonic() + drain_timeout
        while self.busy():
            if time.monotonic() > deadline:
                raise LLMError(f"llama.cpp server at {self._base_url} still busy after {drain_timeout:.0f} s; "
                               "not stopped")
            time.sleep(0.05)
        server, self._server = self._server, None
        address, self._base_url = self._base_url, None
        del server  # the last reference: the C++ destructor shuts the server down
        if address:
            _wait_closed(address.removesuffix("/v1"), timeout=10.0)

    def _params(self, xllamacpp: Any, path: Path) -> Any:
        """Build llama.cpp server parameters (poll=0: throughput collapses under CPU load otherwise)."""
        p = xllamacpp.CommonParams()
        p.model.path = str(path)
        p.model_alias = {self.name}
        p.n_parallel = self.parallel
        p.n_ctx = self.n_ctx * self.parallel
        for cpu in (p.cpuparams, p.cpuparams_batch):
            cpu.n_threads = self.threads
            cpu.poll = 0
        p.hostnames = [self.host]
        p.port = self.port
        p.endpoint_metrics = True  # needed by handle_metrics(), our start-up barrier
        p.verbosity = 3 if self.verbose else -1
        return p

    def __enter__(self) -> LocalModelServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __del__(self) -> None:
        try:
            self.stop()
        except Exception:  # interpreter shutdown: nothing useful left to report
            pass


def _gauge(metrics: str, name: str) -> float:
    """Value of ``llamacpp:<name>`` in Prometheus text (0 when absent)."""
    for line in metrics.splitlines():
        if line.startswith(f"llamacpp:{name} "):
            return float(line.split()[-1])
    return 0.0


def _wait_healthy(address: str, timeout: float) -> None:
    """Poll ``/health`` until it answers 200, or raise a one-line ``LLMError``."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(address + "/health", timeout=2) as reply:
                if reply.status == 200:
                    return
                last = f"HTTP {reply.status}"
        except (urllib.error.URLError, OSError) as exc:
            last = str(exc)
        time.sleep(0.05)
    raise LLMError(f"llama.cpp server at {address} not healthy after {timeout:.0f} s: {last}")


def _wait_closed(address: str, timeout: float) -> None:
    """Wait until nothing accepts connections at ``address`` any more."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(address + "/health", timeout=0.5).close()
        except (urllib.error.URLError, OSError):
            return
        time.sleep(0.05)


def llm_for(
    base_url: str | list[str] | None, model: str = DEFAULT_GGUF, *, n_ctx: int = 4096, parallel: int = 1,
    timeout: float = 300.0, max_retries: int = 1,
) -> tuple[ChatLLM, LocalModelServer | None]:
    """A chat client for ``base_url`` (one URL, or a list: a fleet); without one, start the bundled model (with
    ``parallel`` slots) and return it too.

    The caller owns the returned server and must ``stop()`` it. The served model's ``model_id``
    is stable across runs (``<name>@llama.cpp:<sha256 prefix>``) so that on-disk caches keyed by
    it survive the random port; a GGUF file of the user's is named by its content too (gguf_tag).
    """
    if base_url:
        return OpenAIChatLLM(base_url, model=model, timeout=timeout, max_retries=max_retries), None
    server = LocalModelServer(model, n_ctx=n_ctx, parallel=parallel)
    url = server.start()
    try:
        tag = gguf_tag(model)
        return OpenAIChatLLM(url, model=server.name, model_id=f"{server.name}@llama.cpp:{tag}", timeout=timeout,
                             max_retries=max_retries), server
    except BaseException:
        server.stop()
        raise


