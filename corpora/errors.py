"""Input errors that name the file, line and field, so a user can fix bad data in one look."""
from __future__ import annotations

from pathlib import Path


class InputError(ValueError):
    """Malformed user input. ``str(err)`` is a single line: ``file:line: field: problem``."""

    def __init__(self, path: str | Path | None, message: str, *, line: int | None = None, field: str | None = None):
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        self.message = message
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = self.path or "<input>"
        if self.line is not None:
            where += f":{self.line}"
        what = f"field '{self.field}': " if self.field else ""
        return f"{where}: {what}{self.message}".replace("\n", " ")
