"""Reading the TOML files users write (expectations, budgets): every way a file can fail to
be read (not a regular file, over :data:`~attnprof.input_files.TOML`'s cap, not UTF-8, not
TOML) is one :class:`UsageError` line naming it, before its content is checked."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from attnprof.errors import UsageError
from attnprof.input_files import TOML, read_input

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["read_toml"]


def read_toml(path: Path, source: str, fix: str) -> dict[str, Any]:
    """The parsed file at ``path``; ``source`` names it in errors ("budgets file 'b.toml'")
    and ``fix`` says what a well-formed one looks like."""
    data = read_input(path, source, cap=TOML)
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{source} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise UsageError(f"{source} nests arrays or tables too deeply to read; {fix}"
                         ) from None
