"""Every command's ``--help`` ends with examples that parse and the command's manual page
(attnprof.cli.help_examples, applied in attnprof.cli.main.build_parser)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from attnprof.cli import help_examples
from attnprof.cli.main import COMMANDS, build_parser

REPO = Path(__file__).resolve().parents[2]
NAMES = [command.NAME for command in COMMANDS]


def _help(name: str) -> str:
    subparsers = build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    return str(subparsers.choices[name].format_help())


def test_every_command_has_two_or_three_examples_and_a_page() -> None:
    assert set(help_examples.EXAMPLES) == set(NAMES) == set(help_examples.PAGES)
    assert all(2 <= len(examples) <= 3 for examples in help_examples.EXAMPLES.values())
    for page in set(help_examples.PAGES.values()):
        assert (REPO / "docs" / page).is_file(), page


def test_the_site_url_is_mkdocs_ymls() -> None:
    match = re.search(r"^site_url:\s*(\S+)", (REPO / "mkdocs.yml").read_text(encoding="utf-8"),
                      re.MULTILINE)
    assert (match.group(1).strip("'\"") if match else None) == help_examples.SITE_URL


@pytest.mark.parametrize("name", NAMES)
def test_help_ends_with_examples_that_parse_and_the_page(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    text = _help(name)
    tail = text[text.rindex("\nexamples:\n"):].splitlines()
    commands = [line.strip() for line in tail if line.startswith("  attnprof ")]
    assert commands == [command for command, _ in help_examples.EXAMPLES[name]]
    # The last line names the page; every example on a line of its own, as written.
    page = help_examples.PAGES[name]
    assert tail[-1] == f"manual: {help_examples.page_link(page)}"
    assert f"docs/{page}" in tail[-1]
    monkeypatch.chdir(REPO)  # the examples name the repository's examples/ files
    for command in commands:
        argv = shlex.split(command)[1:]
        assert argv[0] == name
        args = build_parser().parse_args(argv)
        assert args.command == name, command


def test_descriptions_are_still_wrapped_to_the_terminal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    for name in NAMES:  # the usage and groups' titles (ending in ':') argparse never wraps
        after_usage = _help(name).split("\n\n", 1)[1]
        lines = [line for line in after_usage.splitlines() if not line.endswith(":")]
        assert max(len(line) for line in lines) <= 80, name
