"""The dashboard in a real browser: `ragdoctor dashboard` serves two fixture runs on a loopback port, headless chromium
loads every page, and the test fails on any Streamlit exception box. Screenshots are saved to tests/artifacts/.

Chromium is driven over the DevTools protocol (through `websockets`, which streamlit itself depends on) so that each
page is read when its script run has finished and its content is there, never after a guessed delay: `--dump-dom` with
`--virtual-time-budget` proved racy against Streamlit's websocket (a page could be dumped before its first message).

Needs /usr/bin/chromium (Debian's `chromium` package; .ci/run installs it). Set RAGDOCTOR_UPDATE_SCREENSHOTS=1 to also
refresh docs/dashboard-disagreements.png, the README's screenshot (it is written when missing)."""
from __future__ import annotations

import base64
import itertools
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.ragdoctor.dashboard.runs import CHANGES_B, make_run, retrieval_lab_json

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts"
DOCS_SHOT = ROOT / "docs" / "dashboard-disagreements.png"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--no-first-run", "--disable-sync", "--disable-quic", "--disable-dev-shm-usage", "--window-size=1280,900"]
# page -> (url path, text that only shows once the page has rendered to its end)
PAGES = {
    "overview": ("", "Unmeasured results"),
    "samples": ("samples", "click a row (or pick below) to open it"),
    "disagreements": ("disagreements", "Judge against judge"),
    "retrieval": ("retrieval", "Worst-ranked questions"),
    "compare": ("compare", "Samples whose category changed"),
    "label": ("label", "Calibrated by these labels (PPI)"),
    "playground": ("playground", "Relevant document ids"),
    "index-lab": ("index-lab", "What each index trades"),
    "retrieval-lab": ("retrieval-lab", "What the settings mean"),
}
BROKEN = ('data-testid="stException"', "Traceback (most recent call last)", "Page not found")
FINISHED = 'data-test-script-state="notRunning"'
PAGE_TIMEOUT = 120.0  # seconds for one page to finish its script run (a loaded CI machine, first loads)
RUNS: dict[str, Path] = {}  # the served run folders, by tag ("a", "b")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def write_index_lab(path: Path) -> None:
    import numpy as np

    from eval.index_lab import run_lab, sample_queries

    x = np.random.default_rng(0).standard_normal((400, 8)).astype("float32")
    q, ids = sample_queries(x, 20)
    path.write_text(json.dumps(run_lab(x, q, doc_ids=[str(i) for i in range(400)], query_ids=ids, qrels=None)))


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    """`ragdoctor dashboard RUN_B RUN_A --port N`: waits for the URL it prints, checks /_stcore/health."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (`apt-get install -y chromium`; .ci/run does)")
    base = tmp_path_factory.mktemp("browser")
    run_a, run_b = make_run(base / "run-a"), make_run(base / "run-b", CHANGES_B)
    write_index_lab(run_b / "index-lab.json")  # the Index lab page reads the open run's by default
    (run_b / "retrieval-lab.json").write_text(json.dumps(retrieval_lab_json(0.05)))  # and the Retrieval lab page
    RUNS.update(a=run_a, b=run_b)
    port = _free_port()
    log_path = base / "dashboard.log"
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen([sys.executable, "-m", "ragdoctor.cli", "dashboard", str(run_b), str(run_a),
                                 "--port", str(port)], cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True,
                                start_new_session=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stdout], daemon=True).start()
    try:
        url = f"http://127.0.0.1:{port}"
        first, deadline = "", time.monotonic() + 90
        while not first:
            try:
                first = lines.get(timeout=1)
            except queue.Empty:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"`ragdoctor dashboard` printed no URL (exit status {proc.poll()}); its log: "
                                f"{log_path.read_text()[-3000:]}")
        assert first.strip() == f"ragdoctor dashboard: {url}  (Ctrl+C stops it)"
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as resp:
            assert resp.read().strip() == b"ok"
        yield url
    finally:
        _stop(proc)
        proc.stdout.close()


class Browser:
    """Headless chromium on a fresh profile, one page driven over the DevTools protocol."""

    def __init__(self, profile: Path):
        from websockets.sync.client import connect

        self.proc = subprocess.Popen([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                                      "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                _stop(self.proc)
                pytest.fail("chromium did not open its DevTools port within 60 s")
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        while True:
            targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5).read())
            pages = [t for t in targets if t.get("type") == "page"]
            if pages:
                break
            if time.monotonic() > deadline or self.proc.poll() is not None:
                _stop(self.proc)
                pytest.fail("chromium opened no page within 60 s")
            time.sleep(0.1)
        self._stack = ExitStack()
        self.ws = self._stack.enter_context(connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=30))
        self.ids = itertools.count(1)
        self.call("Page.enable")

    def call(self, method: str, **params) -> dict:
        msg_id = next(self.ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:  # events arrive interleaved with replies; skip them
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def html(self) -> str:
        res = self.call("Runtime.evaluate", expression="document.documentElement.outerHTML", returnByValue=True)
        return res["result"]["value"]

    def open(self, url: str, name: str, marker: str) -> str:
        """Navigate and wait until the script run has finished and ``marker`` shows; fail at once on an exception."""
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + PAGE_TIMEOUT
        dom = ""
        while time.monotonic() < deadline:
            time.sleep(0.5)
            dom = self.html()
            broken = [b for b in BROKEN if b in dom]
            if broken:
                at = dom.find(broken[0])
                text = " ".join(re.sub(r"<[^>]+>", " ", dom[at: at + 6000]).split())
                pytest.fail(f"{name}: {broken[0]!r} on the page: {text[:1200]}")
            if marker in dom and FINISHED in dom:
                time.sleep(1.5)  # charts draw after their element arrives
                dom = self.html()
                if not any(b in dom for b in BROKEN) and FINISHED in dom:
                    return dom
        pytest.fail(f"{name}: not rendered within {PAGE_TIMEOUT:.0f} s ({marker!r} missing or the script still "
                    f"running); the page had {len(dom)} bytes")

    def screenshot(self, path: Path, height: int = 900) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=1280, height=height, deviceScaleFactor=1, mobile=False)
        time.sleep(1.0)  # let the layout settle at the new size
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        self.call("Emulation.clearDeviceMetricsOverride")

    def close(self) -> None:
        try:
            self._stack.close()
        finally:
            _stop(self.proc)


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (`apt-get install -y chromium`; .ci/run does)")
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        b = Browser(Path(profile))
        try:
            yield b
        finally:
            b.close()


@pytest.mark.parametrize("page", list(PAGES))
def test_page_renders_without_exceptions(dashboard, browser, page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path, marker = PAGES[page]
    dom = browser.open(f"{dashboard}/{path}", page, marker)
    if page == "disagreements":  # its charts draw after the script run has finished: wait until they have
        dom = _wait(browser, lambda d: "vega-embed" in d, "disagreements: the charts did not draw")
    png = ARTIFACTS / f"dashboard-{page}.png"
    browser.screenshot(png)
    assert png.stat().st_size > 10_000
    assert "run-b" in dom or page == "playground"  # the run named first on the command line is open
    if page == "disagreements":
        assert "Grounded yet wrong" in dom and "vega-embed" in dom  # the explanations, and the charts drew
        tall = ARTIFACTS / "dashboard-disagreements-full.png"
        browser.screenshot(tall, height=1800)
        if os.environ.get("RAGDOCTOR_UPDATE_SCREENSHOTS") or not DOCS_SHOT.exists():
            DOCS_SHOT.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(tall, DOCS_SHOT)


def _wait(browser: Browser, ok, what: str, timeout: float = PAGE_TIMEOUT) -> str:
    """Poll the page until ``ok(dom)`` holds and its script run has finished; fail on an exception box."""
    deadline = time.monotonic() + timeout
    dom = ""
    while time.monotonic() < deadline:
        time.sleep(0.5)
        dom = browser.html()
        if 'data-testid="stException"' in dom:
            pytest.fail(f"{what}: a Streamlit exception on the page")
        if FINISHED in dom and ok(dom):
            return dom
    pytest.fail(f"{what}: not seen within {timeout:.0f} s")


def _key(browser: Browser, key: str, code: str, vk: int) -> None:
    for kind in ("keyDown", "keyUp"):
        browser.call("Input.dispatchKeyEvent", type=kind, key=key, code=code, windowsVirtualKeyCode=vk,
                     nativeVirtualKeyCode=vk, text=key if kind == "keyDown" and len(key) == 1 else "")


def test_label_page_in_the_browser_saves_a_label_by_key_and_by_click(dashboard, browser):
    """Type a name (its N is not taken as the skip key), press 1 (the groundedness "yes" shortcut), click correctness
    "No": labels.jsonl gets both for the sample shown, with the name, and the answers show on the page."""
    labels = RUNS["b"] / "labels.jsonl"
    before = labels.read_text().splitlines() if labels.exists() else []
    dom = browser.open(f"{dashboard}/label", "label", "Calibrated by these labels (PPI)")
    first = re.search(r"Sample <code[^>]*>([^<]+)</code>", dom).group(1)
    box = 'document.querySelector(\'input[aria-label="Your name (saved with each label)"]\')'
    browser.call("Runtime.evaluate", expression=f"{box}.focus()")
    _key(browser, "N", "KeyN", 78)  # typed into the name box: N is also the skip key, which must not fire here
    browser.call("Input.insertText", text="ina")
    _key(browser, "Enter", "Enter", 13)
    dom = _wait(browser, lambda d: "Type your name above first" not in d, "the name was not taken")
    assert re.search(r"Sample <code[^>]*>([^<]+)</code>", dom).group(1) == first
    browser.call("Runtime.evaluate", expression="document.activeElement.blur()")
    _key(browser, "1", "Digit1", 49)
    _wait(browser, lambda d: "you said <strong>yes</strong>" in d, "the groundedness shortcut did not label")
    browser.call("Runtime.evaluate",
                 expression="document.querySelector('.st-key-lab_answer_correctness_no button').click()")
    _wait(browser, lambda d: "you said <strong>no</strong>" in d, "the correctness button did not label")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.screenshot(ARTIFACTS / "dashboard-label-after.png")
    new = [json.loads(ln) for ln in labels.read_text().splitlines()[len(before):]]
    assert [(x["metric"], x["value"], x["who"]) for x in new] == [("groundedness", 1.0, "Nina"),
                                                                    ("answer_correctness", 0.0, "Nina")]
    assert new[0]["sample_id"] == new[1]["sample_id"] == first
