"""Text from traces, users and records cannot act on the terminal (issue 11, item 4).

Before, escape sequences (``\\x1b[...``, OSC), newlines, NUL and bidi overrides in op,
kernel, annotation or variant names went to the terminal raw, and a newline in a name
forged table lines. Now every string a terminal view shows has been escaped and cut once
(:mod:`attnprof.render.safe`); the JSON keeps it exactly.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from attnprof.formatting import NAME_LIMIT, safe_text
from attnprof.record.check import CheckRow
from attnprof.record.family import decode_record
from attnprof.render.safe import terminal_safe
from attnprof.render.terminal import TerminalRenderer

#: Clears the screen, sets the window title (OSC), forges a table row, NUL, flips text.
PAYLOAD = "\x1b[2J\x1b]0;pwned\x07\n│ forged │ row │\x00\u202eevil\u2028"
KINDS = ("compare", "profile", "analyze", "compare-v1", "ranks")


def poisoned(record: Any) -> Any:
    """``record`` with ``PAYLOAD`` appended to every string field that may hold any text
    (fields typed as a fixed set of words, like ``status``, are left as they are)."""
    data = msgspec.to_builtins(record)
    paths: list[tuple[Any, ...]] = []

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(value, str):
                paths.append((*path, key))
            elif isinstance(value, (dict, list)):
                walk(value, (*path, key))

    walk(data, ())
    for path in paths:
        *parents, last = path
        holder = data
        for key in parents:
            holder = holder[key]
        original = holder[last]
        holder[last] = original + PAYLOAD
        try:
            msgspec.convert(data, type=type(record))
        except msgspec.ValidationError:  # a Literal field: it cannot hold the payload
            holder[last] = original
    return msgspec.convert(data, type=type(record))


def assert_harmless(text: str, color: bool) -> None:
    assert "\x1b[2J" not in text and "\x1b]" not in text and "\x07" not in text
    assert "\x00" not in text and "\u202e" not in text and "\u2028" not in text
    if not color:
        assert "\x1b" not in text
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)  # rich's own colours, when asked for
    assert not any(line.lstrip().startswith("│ forged") for line in plain.splitlines())
    assert "\\x1b[2J" in plain  # shown, escaped: the reader sees what the name holds


@pytest.mark.parametrize("color", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_every_string_of_every_record_kind_is_escaped(
        kind: str, color: bool, records_by_kind: dict[str, Any]) -> None:
    record = poisoned(records_by_kind[kind])
    text = TerminalRenderer(width=200, color=color).render(record)
    assert_harmless(text, color)
    # The record itself still holds every character: --json writes and reads it back whole.
    assert decode_record(record.to_json()) == record
    assert record.run_id.endswith(PAYLOAD)


def test_long_names_are_cut_in_the_terminal_and_kept_in_the_json(
        records_by_kind: dict[str, Any]) -> None:
    record = decode_record(records_by_kind["compare"].to_json())  # a copy of its own
    long_name = "v" * 5000
    record.results[0].variant = long_name
    text = TerminalRenderer(width=200).render(record)
    assert "v" * NAME_LIMIT not in text and "v" * 40 in text
    assert json.loads(record.to_json())["results"][0]["variant"] == long_name


def test_terminal_safe_escapes_every_string_at_any_depth_alike() -> None:
    """Keys, values, list and tuple items at any depth; a name that repeats (the same
    kernel in every rank) escaped alike each time; numbers, flags and None as they were."""
    name = "k\x1b[2J" + "x" * 500
    data = {name: [name, ("t\n", 1, 2.5, None, True), {name: name}], "n": 3, 7: "\u202e",
            "ranks": [{"kernels": {name: 1.5, "plain": 2.0}} for _ in range(3)]}
    cleaned = terminal_safe(data, Any)
    safe = safe_text(name)
    assert cleaned == {safe: [safe, ["t\\n", 1, 2.5, None, True], {safe: safe}], "n": 3,
                       7: "\\u202e",
                       "ranks": [{"kernels": {safe: 1.5, "plain": 2.0}} for _ in range(3)]}
    assert type(cleaned["n"]) is int and cleaned[safe][1][3] is None


def test_safe_text_escapes_and_cuts() -> None:
    assert safe_text("a\x1b[31mb\nc\td\x00e\u202ef\udc80") == \
        "a\\x1b[31mb\\nc\\td\\x00e\\u202ef\\udc80"
    assert safe_text("plain text, µs and × stay") == "plain text, µs and × stay"
    assert safe_text("x" * 10, limit=5) == "xxxx…"


def test_check_rows_are_escaped(tmp_path: Path) -> None:
    from rich.console import Console

    from attnprof.render.check_terminal import render_check

    console = Console(record=True, width=200, color_system=None)
    rows = [CheckRow(what=f"kernel {PAYLOAD}", expected="= 1", observed="0", ok=False,
                     detail=PAYLOAD)]
    render_check(rows, console, title=PAYLOAD, source=PAYLOAD, region=PAYLOAD)
    assert_harmless(console.export_text(), color=False)


@pytest.fixture
def hostile_trace(tmp_path: Path) -> Path:
    """A real CPU trace whose annotation (a record_function label) is made hostile after
    the capture — torch.profiler itself writes such a label as "unknown", other tools and
    edited files need not."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, record_function

    path = tmp_path / "hostile.json"
    with profile(activities=[ProfilerActivity.CPU]) as prof, record_function("attnprof::x"):
        torch.randn(16, 16).softmax(-1)
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    for event in trace["traceEvents"]:
        if event.get("name") == "attnprof::x":
            event["name"] += PAYLOAD
    path.write_text(json.dumps(trace))  # valid JSON: the payload as \u escapes
    return path


def test_analyze_shows_a_hostile_annotation_escaped(hostile_trace: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "attnprof", "analyze", str(hostile_trace),
                             "--json", str(hostile_trace.parent / "out.json")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert_harmless(result.stdout, color=False)
    # The saved analysis keeps the label exactly.
    saved = json.loads((hostile_trace.parent / "out.json").read_text())
    assert any(PAYLOAD in region["name"] for region in saved["reports"][0]["regions"])


def test_compare_shows_a_hostile_variant_name_escaped(tmp_path: Path) -> None:
    user = tmp_path / "ev\x1b[2Jil.py"
    user.write_text("import torch.nn.functional as F\n\n"
                    "def attention(q, k, v, **kw):\n"
                    "    return F.scaled_dot_product_attention(q, k, v, **kw)\n")
    result = subprocess.run(
        [sys.executable, "-m", "attnprof", "compare", "--batch", "1", "--heads", "2",
         "--seq", "32", "--head-dim", "16", "--min-time", "0.01",
         "--variants", f"{user.name}:attention"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x1b" not in result.stderr
    assert "ev\\x1b[2Jil.py" in result.stdout


def test_an_error_message_quoting_a_hostile_name_is_escaped(
        capsys: pytest.CaptureFixture[str]) -> None:
    from attnprof.cli.main import main

    assert main(["compare", "--variants", f"nope{PAYLOAD}"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x00" not in err and "\u202e" not in err
    assert err.count("\n") == 1 and "unknown variant" in err
