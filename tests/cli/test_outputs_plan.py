"""Every output of a run is planned and checked together, before any work (issue 30).

Before: ``analyze T --json X.db --store X.db`` replaced the results store with a JSON
file, exit 0 (item 1); a link inside ``--plots`` named as a figure replaced the input it
pointed at (item 2); ``--plots D --json D/latency.svg`` wrote the record, then a figure
over it (item 3); ``--plots NEW --json NEW/run.json`` and a FIFO in the plots folder
failed after the work, one figure written (item 7). Now the plan
(:mod:`attnprof.cli.planning`) lists every file a run writes — the record, the CSV, the
page, each trace and each figure by its final name — and refuses, in one line with exit
status 2 and no file changed, an output that is the store, an input, a link inside an
output folder, another output, a FIFO, or in a folder that does not exist; the output
folders themselves are made.

The last test runs every command with every output flag against each of those cases.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from plan_tree import PUBLIC_TRACE, Tree, integrity, make_tree, snapshot

from attnprof.cli.main import main

pytestmark = pytest.mark.skipif(not PUBLIC_TRACE.is_file(),
                                reason=f"public trace {PUBLIC_TRACE} not found")

TINY = ["--batch", "1", "--heads", "2", "--seq", "16", "--head-dim", "8", "--min-time", "0.01",
        "--rounds", "1"]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tree:
    made = make_tree(tmp_path / "tree")
    monkeypatch.setenv("ATTNPROF_STORE", str(made.store))
    monkeypatch.chdir(made.root)  # profile's default --out, were it reached, lands here
    return made


def refused(argv: list[str], tree: Tree, capsys: pytest.CaptureFixture[str],
            *needles: str) -> str:
    """Run ``argv``: exit 2, one line naming ``needles``, and no file of the tree changed
    (the store still sound)."""
    before = snapshot(tree.root, tree.store)
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    (line,) = err.splitlines()
    assert line.startswith("attnprof: error: "), line
    for needle in needles:
        assert needle in line, line
    assert snapshot(tree.root, tree.store) == before
    assert integrity(tree.store) == "ok"
    return line


# -- item 1: an output that is the results store --------------------------------------


@pytest.mark.parametrize("flag", ["--json", "--csv", "--html"])
def test_an_output_that_is_the_store_named_by_store_is_refused(
        flag: str, tree: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    refused(["analyze", str(tree.trace), flag, str(tree.store), "--store", str(tree.store)],
            tree, capsys, flag, "results store")


@pytest.mark.parametrize("argv", [
    lambda t: ["diff", str(t.old), str(t.new), "--json", str(t.store)],
    lambda t: ["report", str(t.new), "-o", str(t.store)],
    lambda t: ["analyze", str(t.trace), "--json", f"{t.store}-wal"],
    lambda t: ["analyze", str(t.trace), "--no-store", "--csv", str(t.store)],
], ids=["diff", "report", "wal", "no-store"])
def test_the_store_named_by_the_environment_is_protected(
        argv: Callable[[Tree], list[str]], tree: Tree,
        capsys: pytest.CaptureFixture[str]) -> None:
    refused(argv(tree), tree, capsys, "results store")


def test_the_default_store_is_protected(tree: Tree, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from attnprof.store.location import default_store_path

    monkeypatch.delenv("ATTNPROF_STORE")
    monkeypatch.setenv("XDG_DATA_HOME", str(tree.root / "data"))
    default = default_store_path()
    assert default.is_relative_to(tree.root)
    default.parent.mkdir(parents=True)
    os.link(tree.store, default)  # the same store, found at the default location
    refused(["report", str(tree.new), "-o", str(default)], tree, capsys, "results store")


# -- item 2: a link inside --plots -----------------------------------------------------


def test_a_link_in_the_plots_folder_to_the_input_trace_is_refused(
        tree: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    plots = tree.root / "P"
    plots.mkdir()
    (plots / "trace1-timeline.png").symlink_to(tree.trace)
    refused(["analyze", str(tree.trace), "--plots", str(plots)], tree, capsys,
            "trace1-timeline.png", "symbolic link")


def test_a_link_in_the_plots_folder_to_the_variant_file_is_refused(
        tree: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    plots = tree.root / "P"
    plots.mkdir()
    (plots / "latency.svg").symlink_to(tree.variant)
    refused(["compare", *TINY, "--variants", tree.user_variant, "--plots", str(plots)],
            tree, capsys, "latency.svg", "symbolic link")


# -- item 3: a figure over the record --------------------------------------------------


def test_a_record_or_csv_with_a_figures_name_in_the_plots_folder_is_refused(
        tree: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    d = tree.root / "D"
    refused(["compare", *TINY, "--variants", "naive", "--plots", str(d),
             "--json", str(d / "latency.svg"), "--csv", str(d / "memory.png")], tree, capsys,
            "same file")
    refused(["analyze", str(tree.trace), "--plots", str(d), "--json",
             str(d / "trace1-categories.svg")], tree, capsys, "same file")
    assert not d.exists()


# -- item 7: outputs checked late ------------------------------------------------------


def test_a_record_in_a_plots_folder_yet_to_be_made(tree: Tree,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    new = tree.root / "NEW"
    assert main(["analyze", str(tree.trace), "--plots", str(new), "--json",
                 str(new / "run.json")]) == 0, capsys.readouterr().err
    assert sorted(p.name for p in new.iterdir()) == [
        "run.json", "trace1-categories.png", "trace1-categories.svg", "trace1-timeline.png",
        "trace1-timeline.svg"]
    assert integrity(tree.store) == "ok"


def test_a_fifo_with_a_figures_name_is_refused_before_the_work(
        tree: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    plots = tree.root / "P"
    plots.mkdir()
    os.mkfifo(plots / "trace1-timeline.png")
    refused(["analyze", str(tree.trace), "--plots", str(plots)], tree, capsys, "FIFO")
    assert [p.name for p in plots.iterdir()] == ["trace1-timeline.png"]  # no figure written
    assert stat.S_ISFIFO(os.stat(plots / "trace1-timeline.png").st_mode)


def test_the_plots_folders_of_several_records_are_planned_too(
        tree: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    plots = tree.root / "P"
    (plots / "2-compare").mkdir(parents=True)
    (plots / "2-compare" / "memory.svg").symlink_to(tree.old)
    refused(["report", str(tree.old), str(tree.new), "-o", str(tree.root / "r.html"),
             "--plots", str(plots)], tree, capsys, "memory.svg", "symbolic link")


# -- inputs the plan knows besides the ones every command has ---------------------------


BUDGETS = Path(__file__).resolve().parents[2] / "examples" / "budgets" / "cpu-attention.toml"


@pytest.mark.parametrize(("argv", "needle"), [
    (lambda t: ["compare", *TINY, "--variants", "naive", "--budgets", str(t.root / "b.toml"),
                "--csv", str(t.root / "b.toml")], "is the input"),
    (lambda t: ["check", t.user_variant, "--expect", str(t.expect), "--json", str(t.variant)],
     "is the input"),
    (lambda t: ["sweep", "--resume", str(t.sweep), "--json", str(t.root / "new-sweep.json"),
                "--csv", str(t.sweep)], "is the input"),
    (lambda t: ["sweep", "--resume", str(t.sweep), "--csv", str(t.sweep)],
     "same file as --resume"),
], ids=["compare-budgets", "check-variant-file", "sweep-resume-read", "sweep-resume-written"])
def test_the_other_inputs_are_inputs_too(argv: Callable[[Tree], list[str]], needle: str,
                                         tree: Tree,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    shutil.copyfile(BUDGETS, tree.root / "b.toml")
    refused(argv(tree), tree, capsys, needle)


# -- every command x every output flag x every case ------------------------------------


@dataclass(frozen=True)
class Command:
    """How the matrix runs one command: its arguments, the input an output may not be,
    its output flags, a figure it draws and the trace its trace folder holds."""

    argv: Callable[[Tree], list[str]]
    input: Callable[[Tree], Path]
    files: tuple[str, ...]
    folders: tuple[str, ...]
    figure: str
    trace: str = ""  # the variant (or model run) whose trace the folder holds

    def holds(self, tree: Tree, flag: str) -> str:
        """A file the folder of ``flag`` will hold."""
        if flag == "--plots":
            from attnprof.render.figures.base import file_stem

            return f"{self.figure.replace('USER', file_stem(tree.user_variant))}.png"
        from attnprof.measure.capture import trace_file_name

        return trace_file_name(self.trace.replace("USER", tree.user_variant))


COMMANDS: dict[str, Command] = {
    "analyze": Command(lambda t: ["analyze", str(t.trace)], lambda t: t.trace,
                       ("--json", "--csv", "--html"), ("--plots",), "trace1-timeline"),
    "compare": Command(lambda t: ["compare", *TINY, "--variants", t.user_variant],
                       lambda t: t.variant, ("--json", "--csv", "--html"),
                       ("--trace", "--plots"), "latency", "USER"),
    "profile": Command(lambda t: ["profile", t.user_variant, *TINY], lambda t: t.variant,
                       ("--json", "--html"), ("--out", "--plots"), "USER-categories", "USER"),
    "check": Command(lambda t: ["check", str(t.trace), "--expect", str(t.expect)],
                     lambda t: t.expect, ("--json", "--html"), ("--plots",), "check"),
    "model": Command(lambda t: ["model", f"{t.factory}:make", "--seq", "8"],
                     lambda t: t.factory, ("--json", "--csv", "--html"), ("--trace", "--plots"),
                     "model-latency", "model-as-built-prefill"),
    "sweep": Command(lambda t: ["sweep", "--seq", "16,32", "--batch", "1", "--heads", "2",
                                "--head-dim", "8", "--variants", t.user_variant],
                     lambda t: t.variant, ("--json", "--csv", "--plot", "--html"),
                     ("--plots",), "scaling-latency"),
    "limits": Command(lambda t: ["limits", "--variants", t.user_variant], lambda t: t.variant,
                      ("--json", "--html"), ("--plots",), "limits"),
    "recommend": Command(lambda t: ["recommend", "--from", str(t.sweep)], lambda t: t.sweep,
                         ("--json", "--html"), ("--plots",), "scaling-memory"),
    "diff": Command(lambda t: ["diff", str(t.old), str(t.new)], lambda t: t.old,
                    ("--json", "--csv", "--html"), ("--plots",), "diff"),
    "report": Command(lambda t: ["report", str(t.new)], lambda t: t.new, ("-o",),
                      ("--plots",), "roofline"),
}
CASES = ("store", "input", "link-to-input", "link-in-folder", "other-output", "fifo",
         "missing-parent")
MATRIX = [(name, flag, case) for name, c in COMMANDS.items()
          for flag in (*c.files, *c.folders) for case in CASES]


def _case(command: Command, flag: str, case: str, tree: Tree) -> list[str]:
    """The arguments that give ``flag`` the value of ``case`` (and what else it needs)."""
    root, folder = tree.root, flag in command.folders
    out = root / "out.svg"  # a suffix --plot takes: every refusal is the plan's
    extra: list[str] = []
    if case == "store":
        value = tree.store
    elif case == "input":
        value = command.input(tree)
    elif case == "link-to-input":
        value = root / "link"
        value.symlink_to(command.input(tree))
    elif case == "link-in-folder":  # a link inside the folder, named as a file it writes
        plots = root / "P"
        plots.mkdir()
        name = command.holds(tree, flag if folder else "--plots")
        (plots / name).symlink_to(tree.victim)
        value = plots
        if not folder:  # the file flag aims at that link; the folder is --plots
            extra, value = ["--plots", str(plots)], plots / name
    elif case == "other-output":
        if folder:  # the record (or the page) is the folder itself
            extra, value = ["-o" if "-o" in command.files else "--json", str(out)], out
        else:
            other = next((f for f in command.files if f != flag), None)
            if other is None:  # report: its page among the figures
                plots = root / "P"
                value = plots / command.holds(tree, "--plots")
                extra = ["--plots", str(plots)]
            else:
                extra, value = [other, str(out)], out
    elif case == "fifo":
        if folder:
            value = root / "P"
            value.mkdir()
            os.mkfifo(value / command.holds(tree, flag))
        else:
            value = root / "fifo.svg"
            os.mkfifo(value)
    else:
        assert case == "missing-parent"
        value = root / "missing" / ("P" if folder else "out.svg")
    if command.argv is COMMANDS["report"].argv and flag != "-o" and "-o" not in extra:
        extra += ["-o", str(root / "page.html")]
    if command.argv is COMMANDS["profile"].argv and flag != "--out":
        extra += ["--out", str(root / "traces")]
    return [*command.argv(tree), *extra, flag, str(value)]


@pytest.mark.parametrize(("name", "flag", "case"), MATRIX)
def test_every_output_of_every_command_is_planned(
        name: str, flag: str, case: str, tree: Tree,
        capsys: pytest.CaptureFixture[str]) -> None:
    argv = _case(COMMANDS[name], flag, case, tree)
    line = refused(argv, tree, capsys)
    if case == "missing-parent":  # refused, not made: only the output folders are made
        assert "does not exist" in line, line


def test_the_figures_writer_refuses_a_link_made_after_the_plan(tree: Tree) -> None:
    from attnprof.errors import UsageError
    from attnprof.record.family import load_record
    from attnprof.render.images import write_plots

    plots = tree.root / "P"
    plots.mkdir()
    (plots / "memory.svg").symlink_to(tree.victim)
    content = tree.victim.read_bytes()
    with pytest.raises(UsageError, match="symbolic link"):
        write_plots(load_record(tree.new), plots)
    assert tree.victim.read_bytes() == content
    assert (plots / "memory.svg").is_symlink()
