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
    """``"a,b, c"`` -> ``["a", "b", "c"]`` (for flags that take comma-separated names).

    A value that names nothing (``--variants ''``, ``,``) is a mistake, not "the default":
    the default is what leaving the flag out means.
    """
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r} names nothing; give comma-separated "
                                         "names, or leave the flag out for the default")
    return names
