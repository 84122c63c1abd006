"""A run builds only its own command's parser (issue 32: analyze's start-up); that parser
must be the one the full command line has."""

from __future__ import annotations

import argparse

import pytest

from attnprof.cli import main


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[name]
            return found
    raise AssertionError("no subcommands")


def test_every_command_module_has_its_name() -> None:
    assert [c.NAME for c in main.COMMANDS] == list(main._COMMAND_MODULES)


@pytest.mark.parametrize("name", list(main._COMMAND_MODULES))
def test_one_commands_parser_is_the_full_parsers(name: str) -> None:
    alone = main.build_parser(name)
    assert _subparser(alone, name).format_help() == _subparser(main.build_parser(),
                                                               name).format_help()


def test_a_run_parses_as_the_full_parser_does() -> None:
    argv = ["analyze", "t.json", "--top", "3", "--no-store"]
    assert vars(main.build_parser("analyze").parse_args(argv)) == vars(
        main.build_parser().parse_args(argv))
