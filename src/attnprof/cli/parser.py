"""argparse, made to report user mistakes the project's way: one line, exit status 2."""

from __future__ import annotations

import argparse
from typing import NoReturn

from attnprof.errors import UsageError


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise :class:`UsageError` instead of printing usage."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}; see '{self.prog} --help'")


def csv_list(text: str) -> list[str]:
    """``"a,b, c"`` -> ``["a", "b", "c"]`` (for flags that take comma-separated names)."""
    return [part.strip() for part in text.split(",") if part.strip()]
