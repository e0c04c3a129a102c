"""`ragdoctor dashboard [RUN ...]`: serve the Streamlit dashboard (app.py) on loopback and print its URL.

It runs ``python -m streamlit run app.py --server.headless true --server.address HOST --server.port N
--browser.gatherUsageStats false -- RUN ...``, waits until ``/_stcore/health`` answers, prints the URL and serves
until Ctrl+C. The host is 127.0.0.1 unless ``--host`` says otherwise: the dashboard shows your questions, answers and
corpus text, so binding every interface (0.0.0.0) is an explicit choice."""
from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from corpora.errors import InputError, UsageError
from corpora.run_folder import RunFolder

DEFAULT_PORT = 8501


def app_path() -> Path:
    """app.py beside the packages (a source checkout or an editable install), else wherever `import app` finds it."""
    here = Path(__file__).resolve().parent.parent / "app.py"
    if here.exists():
        return here
    spec = importlib.util.find_spec("app")
    if spec is None or spec.origin is None:
        raise InputError(None, "app.py not found: reinstall ragdoctor (pip install -e .)")
    return Path(spec.origin)


def _bind(host: str, port: int, *, reuse: bool = False) -> int:
    """Bind ``host``:``port`` for a moment (0: any free port) and return the port; OSError when it cannot be.
    ``reuse``: as the server will (SO_REUSEADDR: a port in TIME_WAIT is no bar)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        if reuse:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        return int(s.getsockname()[1])


def free_port(host: str = "127.0.0.1") -> int:
    return _bind(host, 0)


def streamlit_command(app: Path, runs: list[str], host: str, port: int) -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", str(app), "--server.headless", "true", "--server.address", host,
            "--server.port", str(port), "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
            "--client.toolbarMode", "viewer",
            "--", *runs]


def url_for(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else ("localhost" if host == "::" else host)
    shown = f"[{shown}]" if ":" in shown else shown
    return f"http://{shown}:{port}"


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as resp:
                if resp.read().strip() == b"ok":
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    return False


def cmd_dashboard(args) -> int:
    port = pick_port(args.host, args.port)
    runs = []
    for r in args.runs:
        p = Path(r)
        if not p.exists():
            raise InputError(p, "run folder not found")
        if not RunFolder.is_run(p) and not RunFolder.find([p]):
            raise InputError(p, "not a run folder (no results.jsonl, results.parquet or traces.jsonl) and holds none")
        runs.append(str(p.resolve()))
    url = url_for(args.host, port)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"ragdoctor: warning: serving on {args.host}: anyone who can reach this machine can read these runs",
              file=sys.stderr)
    cmd = streamlit_command(app_path(), runs, args.host, port)
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    # streamlit's stdout only repeats the URL; its stderr (logs, tracebacks) goes straight to the terminal
    proc = subprocess.Popen(cmd, env=env, stdout=None if args.verbose else subprocess.DEVNULL)

    def on_term(signum, frame):  # a supervisor's SIGTERM stops the server too, never leaves it orphaned
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        if not wait_healthy(url, proc, timeout=args.timeout):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
            print(f"ragdoctor: error: the dashboard did not come up on {url} within {args.timeout:g} s "
                  "(see the messages above)", file=sys.stderr)
            return 2
        print(f"ragdoctor dashboard: {url}  (Ctrl+C stops it)", flush=True)
        return proc.wait() or 0
    except KeyboardInterrupt:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        print("ragdoctor: dashboard stopped", file=sys.stderr)
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)


def pick_port(host: str, port: int | None) -> int:
    """``port`` as given; 0: a free one; None: 8501 when it is free, else a free one. A host this machine cannot
    listen on (a name that does not resolve, an address it does not hold) and a given port that is taken are usage
    errors naming the option, found before the server starts."""
    try:
        socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError) as exc:
        raise UsageError(f"--host {host!r}: not an address or a name this machine resolves "
                         f"({getattr(exc, 'strerror', None) or exc})") from None
    try:
        free_port(host)
    except OSError as exc:
        raise UsageError(f"--host {host}: cannot listen there ({exc.strerror or exc})") from None
    if port:
        try:
            return _bind(host, port, reuse=True)
        except OSError as exc:
            raise UsageError(f"--port {port}: cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    if port is None:
        try:
            return _bind(host, DEFAULT_PORT)
        except OSError:
            pass
    return free_port(host)


def register(sub, pipeline_options) -> None:
    p = sub.add_parser("dashboard", help="serve the Streamlit dashboard on loopback and print its URL")
    p.add_argument("runs", nargs="*", metavar="RUN", help="run folders (or folders of runs); default: runs/*")
    p.add_argument("--port", type=int, default=None,
                   help=f"port (default {DEFAULT_PORT}, or a free one when that is taken; 0: a free one)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 exposes it)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the server to come up")
    p.add_argument("--verbose", action="store_true", help="show streamlit's own output")
    p.set_defaults(func=cmd_dashboard)
