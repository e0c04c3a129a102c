"""Input errors that name the file, line and field, so a user can fix bad data in one look; and the one channel
through which skipped records and warnings about ambiguous input reach the user (the CLI prints it to stderr)."""
from __future__ import annotations

import logging
from pathlib import Path

NOTICES = logging.getLogger("ragdoctor.notices")


class InputError(ValueError):
    """Malformed user input. ``str(err)`` is a single line: ``file:line: field 'x': problem``."""

    def __init__(self, path: str | Path | None, message: str, *, line: int | None = None, field: str | None = None):
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        self.message = message
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = self.path if self.path is not None else ("<input>" if self.line is not None else "")
        if self.line is not None:
            where += f":{self.line}"
        what = f"field '{self.field}': " if self.field else ""
        return f"{where + ': ' if where else ''}{what}{self.message}".replace("\n", " ").replace("\r", " ")


class UsageError(InputError):
    """A command line that cannot be run as given (an unknown name, an option out of range): exit status 2."""

    def __init__(self, message: str):
        super().__init__(None, message)


def report_skipped(err: InputError) -> None:
    """A bad record was skipped and the rest processed: say so (never silently)."""
    NOTICES.warning("skipped bad record: %s", err.one_line())


def report_or_collect(errors: list[InputError] | None, *errs: InputError) -> None:
    """Bad records that were skipped: handed to the caller's ``errors`` when it collects them, else reported now."""
    if errors is not None:
        errors.extend(errs)
    else:
        for err in errs:
            report_skipped(err)


def warn(message: str) -> None:
    """Input that is ambiguous or only partly usable: warn (the CLI prints each distinct warning once)."""
    NOTICES.warning("warning: %s", message.replace("\n", " "))
