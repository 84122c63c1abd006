"""Reading the TOML files users write (expectations, budgets): every way a file can fail to
be read is one :class:`UsageError` line naming it, before its content is checked."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from attnprof.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["read_toml"]


def read_toml(path: Path, source: str, fix: str) -> dict[str, Any]:
    """The parsed file at ``path``; ``source`` names it in errors ("budgets file 'b.toml'")
    and ``fix`` says what a well-formed one looks like."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{source} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise UsageError(f"{source} nests arrays or tables too deeply to read; {fix}"
                         ) from None
