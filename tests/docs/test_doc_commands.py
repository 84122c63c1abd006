"""Every ``attnprof COMMAND --flag`` the README and the manual show exists: the command is
one of the CLI's and each flag is in that command's ``--help``, read from the real parser
in-process. A flag named alone (a code span that starts with ``--``) must be some
command's."""

from __future__ import annotations

import re

import pytest
from markdown_docs import Page, command_lines, inline_code, pages

from attnprof.cli.main import COMMANDS, DEFAULT_COMMAND, build_parser

PAGES = pages()
_FLAG = re.compile(r"(?<![\w-])(--[a-z][\w-]*)")


def _help_flags() -> dict[str, set[str]]:
    """Each command's flags as its ``--help`` prints them ('' for the top level)."""
    parser = build_parser()
    flags = {"": set(_FLAG.findall(parser.format_help()))}
    subparsers = parser._subparsers._group_actions[0]  # type: ignore[union-attr]
    for name, sub_parser in subparsers.choices.items():
        flags[name] = set(_FLAG.findall(sub_parser.format_help()))
    return flags


HELP = _help_flags()
ALL_FLAGS = set().union(*HELP.values())


def _problems(page: Page) -> list[str]:
    problems = []
    for line, args in command_lines(page):
        where = f"{page.name}:{line}: attnprof {' '.join(args)}"
        positional = [a for a in args if not a.startswith("-")]
        if args and args[0] in HELP and args[0]:  # '' is the top level, not a command
            command, rest = args[0], args[1:]
        elif not positional or args[0].startswith("-"):
            command, rest = DEFAULT_COMMAND, args  # bare `attnprof [flags]` is compare
        else:
            problems.append(f"{where}: {args[0]!r} is not a command "
                            f"(commands: {', '.join(sorted(n for n in HELP if n))})")
            continue
        for arg in rest:
            if not arg.startswith("--"):
                continue
            flag = arg.split("=", 1)[0]
            if flag not in HELP[command] and flag not in HELP[""]:
                problems.append(f"{where}: {flag} is not in 'attnprof {command} --help'")
    # The measured figures also name the benchmark scripts' own flags (`--repeat`).
    standalone = page.name != "docs/benchmarks.md"
    for line, code in inline_code(page) if standalone else ():
        if code.startswith("--"):
            flag = _FLAG.match(code)
            if flag and flag.group(1) not in ALL_FLAGS:
                problems.append(f"{page.name}:{line}: `{code}`: no command has "
                                f"{flag.group(1)}")
    return problems


def test_help_is_read() -> None:
    assert {c.NAME for c in COMMANDS} <= set(HELP)
    assert "--seq" in HELP["compare"] and "--expect" in HELP["check"]
    assert "--expect" not in HELP["compare"]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_commands_and_flags_exist(page: Page) -> None:
    assert _problems(page) == []


def test_the_checker_catches_what_does_not_exist() -> None:
    page = Page(path=PAGES[0].path, text="")
    page.prose = [(1, "`attnprof compare --seq 8 --no-such-flag` `attnprof frobnicate` "
                      "`attnprof --seq 8 --expect x` `--nothing-like-this` "
                      "`attnprof check --expect e.toml naive`")]
    found = _problems(page)
    assert len(found) == 4, found
    assert "--no-such-flag is not in 'attnprof compare --help'" in found[0]
    assert "'frobnicate' is not a command" in found[1]
    assert "--expect is not in 'attnprof compare --help'" in found[2]
    assert "no command has --nothing-like-this" in found[3]
