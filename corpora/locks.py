"""A lock file that one holder (thread or process) holds at a time: the run folder's claim (corpora/run_folder.py) and
an index build (rag/index_dir.py). Each caller says in its own words what a refusal, a wait or a takeover means.

With ``fcntl`` (POSIX) the lock is an exclusive ``flock`` on the file, released by the kernel when its holder dies, so a
killed holder never leaves it locked; the file is removed while still held when its holder lets go. Without ``fcntl``
(Windows) the file's exclusive creation is the lock and the holder's pid is written in it: nothing releases it when
its holder is killed, so a lock file whose process no longer runs is taken over (``Held.took_over`` says from whom),
moved aside atomically first, so a live holder's lock is never removed. Either way the holder writes who it is
(``{"what", "pid", "since"}``) in the file, for a refused or waiting caller to name."""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: the lock file's exclusive creation is the lock (see acquire)
    fcntl = None  # type: ignore[assignment]

STALE_EMPTY_S = 10.0  # a lock file with no holder written in it for this long: its creator died before writing it
POLL_S = 0.1  # without fcntl, how often a caller that waits tries again
_HELD: set[str] = set()  # the lock files this process holds without fcntl (a pid equal to ours may be a dead run's)


class Busy(Exception):
    """Another holder (thread or process) holds the lock; the caller says what that means."""

    def __init__(self, lock: Path):
        super().__init__(str(lock))
        self.lock = lock


@dataclass
class Held:
    """A lock this process holds: ``fd`` is open on ``path`` while held. ``took_over``: who left the lock behind when
    it was taken over from a process that no longer runs (only without fcntl), else ""."""

    path: Path
    fd: int
    took_over: str = ""

    def release(self) -> None:
        release(self.path, self.fd)


def kernel_released() -> bool:
    """Whether the operating system lets go of a lock when its holder dies (``fcntl``). Without it the pid written in
    the lock file decides, and a pid given to another process since keeps the lock held: a caller may name the file."""
    return fcntl is not None


def _parse_lock(raw: bytes) -> dict | None:
    try:
        info = json.loads(raw.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError and JSONDecodeError
        return None
    ok = isinstance(info, dict) and isinstance(info.get("pid"), int) and not isinstance(info["pid"], bool)
    return info if ok else None


def lock_info(lock: Path) -> dict | None:
    """What the holder of ``lock`` wrote in it ({"what", "pid", "since"}), or None (no such file, or nothing readable
    in it). The holder writes it right after taking the lock, so an empty file is read again for a moment."""
    for _ in range(20):
        try:
            info = _parse_lock(lock.read_bytes())
        except FileNotFoundError:
            return None
        except OSError:
            info = None
        if info is not None:
            return info
        time.sleep(0.01)
    return None


def who(info: dict | None) -> str:
    """``evaluation (pid 12, since 2026-...)`` from what a holder wrote; "run" when nothing was."""
    return f"{info.get('what', 'run')} (pid {info['pid']}, since {info.get('since', '?')})" if info else "run"


def holder(lock: Path) -> str:
    """Who holds ``lock``, as its holder wrote it (``evaluation (pid 12, since 2026-...)``)."""
    return who(lock_info(lock))


# --- without fcntl (Windows): the lock file's exclusive creation is the lock, and the pid written in it says whether
# its holder still runs. Nothing releases it when the holder is killed, so a lock whose process is gone is taken over.
def _key(lock: Path) -> str:
    return os.path.normcase(os.path.abspath(lock))


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs now. Where it cannot be told, alive: a lock is never taken from a live holder."""
    if pid <= 0:
        return False
    if sys.platform == "win32":  # os.kill(pid, 0) would end the process there
        import ctypes  # noqa: PLC0415

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return ctypes.get_last_error() != 87  # ERROR_INVALID_PARAMETER: no such process (5: another user's)
        try:
            code = ctypes.c_ulong()
            return not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)) or code.value == 259  # STILL_ACTIVE
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it runs, as another user
        return True
    return True


def _dead_holder(lock: Path) -> tuple[str, bytes] | None:
    """Without fcntl: (who, the lock file's bytes) when the process that left ``lock`` no longer runs, else None
    (held by a live process, being written by one, or gone already)."""
    try:
        seen = lock.read_bytes()
        age = time.time() - lock.stat().st_mtime
    except OSError:
        return None
    info = _parse_lock(seen)
    if info is None:  # its creator writes who it is at once: one that has not for long died first
        return ("run (no pid written)", seen) if age > STALE_EMPTY_S else None
    pid = info["pid"]
    if pid == os.getpid():  # this process: held by another of its threads, or left by a dead run that had our pid
        return None if _key(lock) in _HELD else (who(info), seen)
    return None if _pid_alive(pid) else (who(info), seen)


def _remove_stale(lock: Path, seen: bytes) -> bool:
    """Remove ``lock`` if it still holds ``seen`` (a dead holder's); False when it now is another holder's. Moved
    aside first, atomically: of two callers taking over one stale lock only one moves it, and a live holder's file
    moved by mistake (written between our read and our move) is put back."""
    aside = lock.with_name(f"{lock.name}.{os.getpid()}-{threading.get_ident()}.stale")
    try:
        os.replace(lock, aside)
    except FileNotFoundError:
        return True  # another caller removed it first: creating it decides between us
    except OSError:
        return False  # Windows: its holder still has it open
    try:
        if aside.read_bytes() == seen:
            return True
        try:
            os.link(aside, lock)  # fails where a third caller created one meanwhile: that one holds then
        except OSError:
            if not lock.exists():
                os.replace(aside, lock)
        return False
    finally:
        with suppress(OSError):
            aside.unlink()


def held(lock: Path) -> bool:
    """Whether another holder holds ``lock`` now (a lock file left by a dead holder is not held)."""
    if fcntl is None:
        return lock.exists() and _dead_holder(lock) is None
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False
    finally:
        os.close(fd)


def _lock_now(fd: int) -> bool:
    """Take ``fd``'s exclusive lock; False when another holder holds it. A few tries over 50 ms: a holder holds it for
    its whole work, a caller asking whether it is held (``held``) for an instant."""
    for attempt in range(5):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if attempt < 4:
                time.sleep(0.01)
    return False


def acquire(lock: Path, what: str, *, wait: Callable[[], None] | None = None) -> Held:
    """Hold ``lock`` (its folder made if need be), with who holds it (``what``, our pid, the time) written in.
    Another holder (thread or process) holding it: ``Busy``, or with ``wait``, ``wait()`` is called once and the lock
    is waited for (a blocking ``flock``; without fcntl, tried again every ``POLL_S``). Without ``fcntl`` a lock file
    whose holder no longer runs (killed: nothing removed it) is taken over (``Held.took_over`` names it). An OSError
    other than a race (a folder that cannot be made or written) is raised as it is."""
    took_over = ""
    waiting = False
    races = 0
    while True:
        if wait is None:
            races += 1
            if races > 20:
                raise Busy(lock)
        lock.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | (0 if fcntl else os.O_EXCL), 0o644)
        except FileExistsError:
            stale = _dead_holder(lock)
            if stale is not None and _remove_stale(lock, stale[1]):
                took_over = stale[0]
                continue
            if not lock.exists():
                continue  # released meanwhile: again
            if wait is None:
                raise Busy(lock) from None
            if not waiting:
                waiting = True
                wait()
            time.sleep(POLL_S)
            continue
        except FileNotFoundError:  # the folder was removed meanwhile (a claim that wrote nothing): again
            if waiting:
                time.sleep(POLL_S)
            continue
        if fcntl is not None:
            try:
                if not _lock_now(fd):
                    if wait is None:
                        raise Busy(lock)
                    if not waiting:
                        waiting = True
                        wait()
                    fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
            try:  # its last holder may have removed the file between our open and our lock: it then locks nothing
                mine = os.path.samestat(os.fstat(fd), os.stat(lock))
            except FileNotFoundError:
                mine = False
            if not mine:
                os.close(fd)
                continue
        else:
            _HELD.add(_key(lock))
        since = datetime.now().astimezone().isoformat(timespec="seconds")
        try:
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps({"what": what, "pid": os.getpid(), "since": since}).encode())
        except BaseException:  # a full disk: let go rather than leave a lock nobody holds
            release(lock, fd)
            raise
        return Held(lock, fd, took_over)


def release(lock: Path, fd: int) -> None:
    """Remove the lock file, then let go. With ``fcntl``: removed while still held (closing the descriptor releases
    the lock). Without: closed first (Windows removes no file that is open), then removed if it is still ours."""
    try:
        mine = os.path.samestat(os.fstat(fd), os.stat(lock))
    except OSError:
        mine = False
    if fcntl is None:
        os.close(fd)
        if mine:
            with suppress(OSError):
                lock.unlink()
        _HELD.discard(_key(lock))  # only now: until the file is gone, our pid in it must read as a live holder
        return
    if mine:
        with suppress(OSError):
            lock.unlink()
    os.close(fd)
