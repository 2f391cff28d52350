"""Errors a user can act on; the CLI prints them as one line instead of a traceback."""

from __future__ import annotations


class VeilError(Exception):
    """A problem with the user's input, options or environment."""


class InputError(VeilError):
    """Bad input data, located by file and (1-based) line or record number."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path, self.line, self.message = path, line, message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")
