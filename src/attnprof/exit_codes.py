"""The one exit-status table of every command: what 0, 1, 2 and 3 mean for each, and the
statuses of a stop. Commands return their status as an :class:`ExitCode`; the docs quote
:func:`markdown_table` (``python -m attnprof.exit_codes`` prints it), and a test holds
every quoted copy to it.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["TABLE", "ExitCode", "markdown_table", "stopped"]


class ExitCode(IntEnum):
    """What a command's exit status says, whatever the command."""

    #: Done: every answer is in the output.
    OK = 0
    #: A gate failed: a budget, an expectation, a regression past the limit, files that
    #: could not be read (the rest done).
    FAILED = 1
    #: A user mistake: one line naming the bad value and the fix, nothing written.
    USAGE = 2
    #: Finished and everything kept, but some of it is not an answer to read as one.
    UNMEASURED = 3
    #: Finished, but the store could not take the run after it: its record is kept in a
    #: file instead, said where (the same status as UNMEASURED: kept, not where expected).
    UNSTORED = 3
    #: Stopped by a signal: 128 + the signal, whatever finished kept (:func:`stopped`).
    SIGHUP = 129  # 128 + 1
    SIGINT = 130  # 128 + 2: Ctrl-C
    SIGTERM = 143  # 128 + 15


def stopped(signum: int) -> int:
    """The status of a command a signal stopped: 128 + the signal (130 for Ctrl-C)."""
    return 128 + signum


_MISTAKE = "a user mistake"
#: Status 3 of every command that stores its run, beside its own meaning of 3.
_UNSTORED = ("the run finished but the store could not take it: its record is kept in "
             "`attnprof-unsaved-RUN.json`, said where")
#: Per command (several may share a row), what each of 0-3 means; ``—``: never returned.
TABLE: tuple[tuple[tuple[str, ...], dict[ExitCode, str]], ...] = (
    (("compare",), {
        ExitCode.OK: "done; each row's status is in the table and the record",
        ExitCode.FAILED: "a budget failed (`--budgets`)",
        ExitCode.USAGE: "a user mistake: one line, nothing written",
        ExitCode.UNMEASURED: "a row crashed, erred or timed out (its reason in the table and "
                             f"the record; the other rows are answers); or {_UNSTORED}"}),
    (("profile",), {ExitCode.OK: "done", ExitCode.USAGE: _MISTAKE,
                    ExitCode.UNSTORED: _UNSTORED}),
    (("analyze",), {
        ExitCode.OK: "every file read",
        ExitCode.FAILED: "some files could not be read as traces (skipped, named; the rest "
                         "analysed and written)",
        ExitCode.USAGE: "a user mistake, or no file could be read",
        ExitCode.UNMEASURED: "a trace was taken while other work held its CPUs (its ops ran "
                             "far slower than their peers): its figures are marked, with how "
                             f"to retake it; or {_UNSTORED}"}),
    (("check",), {ExitCode.OK: "every expectation holds",
                  ExitCode.FAILED: "an expectation failed", ExitCode.USAGE: _MISTAKE,
                  ExitCode.UNSTORED: _UNSTORED}),
    (("model",), {
        ExitCode.OK: "done", ExitCode.USAGE: _MISTAKE,
        ExitCode.UNMEASURED: "an implementation's run crashed, erred or timed out, or the "
                             "shares are marked unreliable (every capture was noisy, or its "
                             f"steps disagree); everything is kept, with why; or {_UNSTORED}"}),
    (("sweep",), {
        ExitCode.OK: "every row is an answer: `ok`, `wrong` (measured, off the reference), "
                     "`unsupported`, `oom`, `skipped`",
        ExitCode.FAILED: "a budget failed (`--budgets`)",
        ExitCode.USAGE: "a user mistake (a resume that disagrees with its record included)",
        ExitCode.UNMEASURED: "a row crashed, erred or timed out; every result is in the "
                             "record, `--resume` reruns the timed-out and killed ones; or "
                             f"{_UNSTORED}"}),
    (("limits",), {
        ExitCode.OK: "done (a probe past `--probe-timeout` counts as not fitting in time)",
        ExitCode.USAGE: _MISTAKE,
        ExitCode.UNMEASURED: "a probe crashed or erred: the ceiling leans on a run that says "
                             f"nothing about memory; or {_UNSTORED}"}),
    (("recommend",), {
        ExitCode.OK: "done", ExitCode.USAGE: _MISTAKE,
        ExitCode.UNMEASURED: "a row of its sweep or of the larger batches crashed, erred or "
                             f"timed out; or {_UNSTORED}"}),
    (("runs", "show"), {
        ExitCode.OK: "done",
        ExitCode.USAGE: "a user mistake (an unknown run, an ambiguous prefix, an unusable "
                        "store)"}),
    (("diff",), {
        ExitCode.OK: "done (with `--fail-on-regression PCT`: no row regressed past PCT)",
        ExitCode.FAILED: "`--fail-on-regression PCT`: a row got significantly slower, or its "
                         "peak memory grew, by more than PCT percent, or a row that ran "
                         "before fails now",
        ExitCode.USAGE: "a user mistake (an unknown run, an ambiguous prefix, two records "
                        "of different kinds), or a gate over different workloads (without "
                        "`--allow-workload-change`) or that judged nothing (two traces)"}),
    (("env",), {ExitCode.OK: "done", ExitCode.USAGE: _MISTAKE}),
    (("report",), {
        ExitCode.OK: "done",
        ExitCode.USAGE: "a user mistake (a file that is not a record, an output that cannot "
                        "be written)"}),
    (("project",), {
        ExitCode.OK: "done (a target with no figure for the dtype says so in its row)",
        ExitCode.USAGE: "a user mistake (an unknown device, a bad devices file, a record "
                        "that is not a comparison)"}),
)


def markdown_table() -> str:
    """:data:`TABLE` as the Markdown table the docs quote."""
    codes = (ExitCode.OK, ExitCode.FAILED, ExitCode.USAGE, ExitCode.UNMEASURED)
    lines = ["| command | " + " | ".join(str(int(c)) for c in codes) + " |",
             "| --- |" + " --- |" * len(codes)]
    for commands, meanings in TABLE:
        names = ", ".join(f"`{c}`" for c in commands)
        if commands == ("compare",):
            names += " (and bare `attnprof`)"
        lines.append(f"| {names} | " + " | ".join(meanings.get(c, "—") for c in codes) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
