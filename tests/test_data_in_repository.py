"""Issue 32, item 3: a clone needs nothing beside it. No test reads its data from
``../shared`` (the public traces are kept in ``examples/traces``): a path built to it
skips the tests that use it in every clone without that folder, as 283 tests did."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent

#: A path reaching the folder beside the repository: ``... / "shared" / ...`` or
#: ``"../shared/..."``.
_OUTSIDE = re.compile(r"""/\s*["']shared["']\s*/|["']\.\./shared\b""")


def test_no_test_reads_data_from_beside_the_repository() -> None:
    found = [f"{p.relative_to(TESTS)}:{n}"
             for p in sorted(TESTS.rglob("*.py")) if p != Path(__file__).resolve()
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if _OUTSIDE.search(line)]
    assert found == []


def test_the_rule_catches_both_spellings() -> None:
    assert _OUTSIDE.search('ROOT.parent / "shared" / "traces"')
    assert _OUTSIDE.search("Path('../shared/traces/public')")
    assert not _OUTSIDE.search('{"name": "shared", "cat": "c"}')
