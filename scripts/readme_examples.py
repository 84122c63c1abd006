"""Regenerate the example outputs the README shows, from the current code.

    .venv/bin/python scripts/readme_examples.py               # every example (minutes)
    .venv/bin/python scripts/readme_examples.py profile check # some, by name
    .venv/bin/python scripts/readme_examples.py --list

Each example in README.md sits between ``<!-- example: NAME [options] -->`` and
``<!-- /example -->``: a ``console`` block whose first line is the command
(``$ attnprof ...``), then what it printed. The script runs every command in one scratch
folder, in README order (so ``analyze`` reads the traces ``profile`` wrote there), with the
repository's ``examples/`` beside it, at a fixed terminal width, and writes the output
back: what the command printed on stdout (progress and probes on stderr are left out).
Options of the marker:

* ``width=N`` — the terminal's columns (default 100);
* ``from=TEXT`` — start at the first line that holds TEXT (one word; default: the top);
* ``tables=N`` — up to the bottom edge of the N-th table (and ``extra=M`` lines more);
* ``keep=N`` — N lines of the output at most, then ``…`` (default: all);
* ``status=A,B`` — exit statuses that are expected (default 0); any other stops the script;
* ``needs=NAME`` — reads what example NAME writes (it runs first, also when only this one
  is asked for).

``tests/docs/test_readme_examples.py`` runs every example again, as typed, with the venv's
``attnprof`` on the PATH, and compares the shape of what it prints with what the README
shows: the exit status, the lines above the first table and every line of an example
without one (numbers masked), each table's headers and row names (timings never).

The figures are whatever this machine measured when the script ran: run it on a quiet
machine before a release, and say in the README where they come from.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
#: The README is a landing page: at most this many lines.
MAX_LINES = 200

_START = re.compile(r"^<!-- example: (?P<name>[\w-]+)(?P<options>[^>]*)-->$")
_END = "<!-- /example -->"


@dataclass
class Example:
    """One example block of the README: where it is, its command and what it shows."""

    name: str
    start: int  # index of the marker line
    end: int  # index of the closing marker line
    line: str  # the command as typed: 'attnprof ...'
    command: list[str]
    shown: list[str]  # the output lines the README shows now
    width: int = 100
    keep: int | None = None
    start_at: str | None = None
    tables: int | None = None
    extra: int = 0
    needs: str | None = None
    statuses: tuple[int, ...] = (0,)
    options: dict[str, str] = field(default_factory=dict)


def read_examples(text: str) -> list[Example]:
    """The examples of a README text, in order."""
    lines = text.splitlines()
    found = []
    for index, line in enumerate(lines):
        match = _START.match(line.strip())
        if not match:
            continue
        end = lines.index(_END, index)
        body = lines[index + 1:end]
        if not body or not body[0].startswith("```") or not body[1].startswith("$ attnprof"):
            raise ValueError(f"README line {index + 1}: example {match['name']!r} must hold "
                             "a ```console block whose first line is '$ attnprof ...'")
        tokens = match["options"].split()
        options = dict(t.split("=", 1) for t in tokens if "=" in t)
        found.append(Example(
            name=match["name"], start=index, end=end, line=body[1][2:],
            command=shlex.split(body[1][2:])[1:], shown=body[2:-1],
            width=int(options.get("width", 100)),
            keep=int(options["keep"]) if "keep" in options else None,
            start_at=options.get("from"),
            tables=int(options["tables"]) if "tables" in options else None,
            extra=int(options.get("extra", 0)),
            needs=options.get("needs"),
            statuses=tuple(int(s) for s in options.get("status", "0").split(",")),
            options=options))
    return found


#: What an example may read, linked into its folder: the repository's examples (with the
#: public traces in examples/traces, as a clone has them).
LINKS = {"examples": REPO / "examples"}


def link_inputs(folder: Path) -> None:
    """Link into ``folder`` what the examples read (what exists of it)."""
    for name, target in LINKS.items():
        if target.exists():
            (folder / name).symlink_to(target)


def scratch_folder() -> tempfile.TemporaryDirectory[str]:
    """A folder to run the examples in, with what they read linked in."""
    folder = tempfile.TemporaryDirectory(prefix="attnprof-readme-")
    link_inputs(Path(folder.name))
    return folder


def tidy(output: str, example: Example | None = None) -> list[str]:
    """The output as the README shows it: blank lines around it and trailing blanks gone;
    with an example, cut as its options say."""
    lines = [line.rstrip() for line in output.strip("\n").splitlines()]
    if example is None:
        return lines
    if example.start_at is not None:
        first = next((i for i, line in enumerate(lines) if example.start_at in line), None)
        if first is None:
            raise ValueError(f"no line of the output holds {example.start_at!r}")
        lines = lines[first:]
    end = len(lines)
    if example.tables is not None:
        bottoms = [i for i, line in enumerate(lines) if line.lstrip().startswith("└")]
        if len(bottoms) >= example.tables:
            end = bottoms[example.tables - 1] + 1 + example.extra
    if example.keep is not None:
        end = min(end, example.keep)
    return [*lines[:end], "…"] if end < len(lines) else lines


def run(example: Example, cwd: Path) -> list[str]:
    """Run one example's command as a user would (a new process) and return its lines."""
    # The runs it saves go to a store in the scratch folder, not the user's.
    env = {**os.environ, "COLUMNS": str(example.width), "LINES": "50",
           "ATTNPROF_STORE": str(cwd / "runs.db")}
    done = subprocess.run([sys.executable, "-m", "attnprof", *example.command], cwd=cwd,
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode not in example.statuses:
        sys.exit(f"example {example.name}: exit status {done.returncode}, expected "
                 f"{example.statuses}:\n{done.stdout}\n{done.stderr}")
    return tidy(done.stdout, example)


def rewrite(text: str, outputs: dict[str, list[str]]) -> str:
    """``text`` with the given examples' output lines replaced."""
    lines = text.splitlines()
    for example in reversed(read_examples(text)):
        if example.name in outputs:
            first = example.start + 3  # marker, fence, command
            lines[first:example.end - 1] = outputs[example.name]
    return "\n".join(lines) + "\n"


@dataclass
class Table:
    """A rich table as printed: its header cells (wrapped lines joined), row names, and
    whether its bottom edge was printed (not cut by ``keep``)."""

    headers: list[str]
    rows: list[str]
    closed: bool = False


def tables(lines: list[str]) -> list[Table]:
    """The box-drawn tables in some printed lines, in order."""
    found: list[Table] = []
    header: list[list[str]] = []
    rows: list[str] | None = None
    for line in lines:
        text = line.strip()
        if text.startswith("┃"):
            header.append([cell.strip() for cell in text.strip("┃").split("┃")])
        elif text.startswith("┡") and header:
            joined = [" ".join(" ".join(col).split()) for col in zip(*header, strict=True)]
            rows = []
            found.append(Table(headers=joined, rows=rows))
            header = []
        elif text.startswith("│") and rows is not None:
            name = text.strip("│").split("│")[0].strip()
            if name:
                rows.append(name)
        elif text.startswith("└") and rows is not None:
            found[-1].closed = True
            rows = None
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="examples to regenerate (default: all)")
    parser.add_argument("--list", action="store_true", help="list the examples and exit")
    args = parser.parse_args()
    text = README.read_text(encoding="utf-8")
    examples = read_examples(text)
    if args.list:
        for example in examples:
            print(f"{example.name:10} attnprof {shlex.join(example.command)}")
        return 0
    unknown = set(args.names) - {e.name for e in examples}
    if unknown:
        parser.error(f"no such example: {', '.join(sorted(unknown))}")
    wanted = set(args.names or (e.name for e in examples))
    by_name = {e.name: e for e in examples}
    to_run = set(wanted)
    for name in wanted:  # and what they read, first
        while by_name[name].needs:
            name = by_name[name].needs  # type: ignore[assignment]
            to_run.add(name)
    outputs = {}
    with scratch_folder() as cwd:
        for example in examples:
            if example.name not in to_run:
                continue
            print(f"running {example.name}: attnprof {shlex.join(example.command)}",
                  file=sys.stderr)
            lines = run(example, Path(cwd))
            if example.name in wanted:
                outputs[example.name] = lines
    new = rewrite(text, outputs)
    partial = README.with_name(f".{README.name}.tmp")  # written whole, then renamed
    partial.write_text(new, encoding="utf-8")
    os.replace(partial, README)
    print(f"rewrote {len(outputs)} example(s) in {README.name}", file=sys.stderr)
    if new.count("\n") > MAX_LINES:  # tests/docs/test_readme_examples.py holds it to this
        print(f"warning: {README.name} is {new.count(chr(10))} lines, over {MAX_LINES}: cut an "
              "example with keep= or tables= (a busy machine wraps longer notes)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
