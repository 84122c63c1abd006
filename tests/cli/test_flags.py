"""Issue 17: the library never sees an argparse namespace; the CLI reads the flags commands
share once, into a typed value, instead of attribute lookups with fallbacks at every use."""

from __future__ import annotations

import re
from pathlib import Path

import attnprof
from attnprof.cli.flags import SharedFlags
from attnprof.cli.main import build_parser

SRC = Path(attnprof.__file__).parent


def test_only_the_cli_knows_argparse() -> None:
    outside = [p.relative_to(SRC) for p in SRC.rglob("*.py")
               if "cli" not in p.relative_to(SRC).parts
               and re.search(r"^\s*(import argparse|from argparse)", p.read_text(), re.M)]
    assert outside == []


def test_no_flag_is_read_with_a_fallback_lookup() -> None:
    found = {str(p.relative_to(SRC)): n for p in (SRC / "cli").glob("*.py")
             if (n := p.read_text().count("getattr(args"))}
    assert found == {}


def test_shared_flags_of_a_sweep_and_of_a_command_without_them() -> None:
    parser = build_parser()
    sweep = SharedFlags.of(parser.parse_args(
        ["sweep", "--seq", "64,128", "--variants", "sdpa,naive", "--json", "s.json",
         "--plot", "p.png", "--no-store"]))
    assert sweep.json == "s.json" and sweep.plot == "p.png" and sweep.record_path == "s.json"
    assert sweep.variants == ("sdpa", "naive") and sweep.no_store is True
    assert sweep.csv is None and sweep.resume is None
    # `runs` has no executor and no outputs; its --json is a switch, not a file.
    runs = SharedFlags.of(parser.parse_args(["runs", "--json", "--label", "x"]))
    assert runs.json is None and runs.label == "x"
    assert runs.executor == "inline" and runs.variants == ()
