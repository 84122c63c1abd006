"""The outputs plan of a command line: every file a run will write, checked together
before any work, by the rules of :mod:`attnprof.outputs`.

Every command that writes files calls :func:`plan_outputs` once, with the outputs it
writes itself (``--json``, ``--csv``, a trace folder and each trace it will hold) and the
files it reads; the plan adds what every command shares — ``--html``, each figure file
``--plots DIR`` will write, by its final name, and the results store (with its ``-wal``,
``-shm`` and ``-journal`` siblings), which no output may be, however it is named:
``--store``, ``$ATTNPROF_STORE`` or the default location. See docs/outputs.md.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from attnprof.outputs import Output

__all__ = ["Figures", "plan_measuring", "plan_outputs", "store_files"]

#: The files SQLite keeps beside a database while it is open (or after a crash).
_SIBLINGS = ("-wal", "-shm", "-journal")


class Figures(msgspec.Struct, frozen=True):
    """The figures a run's record will have, as far as they are known before the run: its
    kind and what their names depend on (see
    :func:`~attnprof.render.figures.figure_names`), or the ``exact`` names (records
    already made, as ``report`` has)."""

    kind: str = ""
    variants: Sequence[str] = ()
    traces: int = 0
    exact: Sequence[str] | None = None

    def names(self) -> list[str]:
        """Every name a figure may take: each is written as NAME.png and NAME.svg.
        Imports the figures only when asked (``--plots`` given): not at every start."""
        if self.exact is not None:
            return list(self.exact)
        from attnprof.render.figures import figure_names

        return figure_names(self.kind, variants=self.variants, traces=self.traces)


def plan_outputs(args: argparse.Namespace, outputs: Sequence[Output],
                 inputs: Iterable[str | os.PathLike[str]] = (), *,
                 figures: Figures | None = None) -> list[Output]:
    """Check every output of the run together (``outputs``, plus ``--html``,
    ``--markdown`` and the ``--plots`` files of ``figures``; ``None``: this run writes no
    report) against each other, the ``inputs`` and the store; the whole plan, for
    :func:`~attnprof.outputs.create_folders`. :class:`~attnprof.errors.UsageError` for
    the first that may not be written."""
    from attnprof.outputs import check_outputs

    planned = [*outputs, *(_report_outputs(args, figures) if figures is not None else [])]
    if planned:
        check_outputs(planned, inputs, protected=store_files(args))
    return planned


def plan_measuring(args: argparse.Namespace, variants: Sequence[str], *, kind: str,
                   json_path: str | None, trace_dir: str | None = None,
                   trace_flag: str = "--trace", other_outputs: Sequence[Output] = (),
                   other_inputs: Sequence[str] = (), reports: bool = True) -> list[Output]:
    """:func:`plan_outputs` of a measuring command (compare, profile, check): the record,
    ``other_outputs``, the trace folder and each trace it will hold, and the reports
    (``reports``: ``--html``, ``--markdown`` and every figure ``--plots`` may write),
    against each other, the store, the user's variant files and ``other_inputs``."""
    from attnprof.commands.compare import variant_files, variant_names
    from attnprof.measure.capture import trace_file_name
    from attnprof.outputs import Output

    names = variant_names(variants)
    outputs = [*([Output("--json", json_path)] if json_path is not None else []),
               *other_outputs]
    if trace_dir is not None:
        outputs.append(Output(trace_flag, trace_dir, folder=True,
                              files=tuple(trace_file_name(n) for n in names)))
    return plan_outputs(args, outputs, [*variant_files(names), *other_inputs],
                        figures=Figures(kind, variants=names) if reports else None)


def _report_outputs(args: argparse.Namespace, figures: Figures) -> list[Output]:
    """The report outputs asked for, to check with the command's others: ``--plots`` with
    the files of every figure ``figures`` may hold; refuses, before any work, reports
    when their libraries are missing."""
    from attnprof.cli.flags import SharedFlags
    from attnprof.outputs import Output

    outputs = []
    flags = SharedFlags.of(args)
    html, plots = flags.html, flags.plots
    if html is not None:
        _check_libraries("--html")
        outputs.append(Output("--html", html))
    if flags.markdown is not None:
        outputs.append(Output("--markdown", flags.markdown))
    if plots is not None:
        _check_libraries("--plots")
        from attnprof.render.images import plot_files

        outputs.append(Output("--plots", plots, folder=True,
                              files=plot_files(figures.names())))
    return outputs


def _check_libraries(flag: str) -> None:
    from attnprof.errors import UsageError
    from attnprof.install import install_command
    from attnprof.render.images import check_image_support

    check_image_support(flag)
    try:
        import jinja2  # noqa: F401
    except ImportError:
        raise UsageError(f"{flag} needs jinja2; install it with "
                         f"{install_command('report')}") from None


def store_files(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The results stores a command could mean (its ``--store``, ``$ATTNPROF_STORE`` and
    the default one, whether or not it saves this run: each holds the user's runs) and
    their SQLite siblings, each with how to name it."""
    from attnprof.cli.flags import SharedFlags
    from attnprof.store.location import STORE_ENV, default_store_path

    stores: list[Path] = []
    flag = SharedFlags.of(args).store
    if flag is not None and flag.strip():
        stores.append(Path(flag))
    env = os.environ.get(STORE_ENV, "")
    if env.strip():
        stores.append(Path(env))
    stores.append(default_store_path())
    files = []
    for store in stores:
        files.append((f"the results store {str(store)!r}", store))
        files += [(f"the results store's {suffix[1:]} file {str(store) + suffix!r}",
                   Path(str(store) + suffix)) for suffix in _SIBLINGS]
    return files
