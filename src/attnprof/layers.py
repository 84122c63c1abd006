"""The layer order of the package: data flows up, imports only go down.

Each entry is a unit (a module or package below ``attnprof``), listed bottom to top. A
module may import from its own unit and from units listed before it, never from one after
it; ``tests/test_layers.py`` checks every import in ``src/attnprof`` (lazy and
type-checking ones included) against this list. Where a unit has parts in an order of
their own (the analysis: index, then passes, then findings, then the pipeline that runs
them), the parts are listed as units of their own.
"""

from __future__ import annotations

__all__ = ["LAYERS", "unit_of"]

LAYERS: tuple[str, ...] = (
    # plain helpers: no project imports but each other
    "_version", "layers", "exit_codes", "errors", "install", "signals", "torch_state",
    "formatting", "atomic", "scratch", "input_files", "outputs",
    # the one rule for spread, interval and "differs beyond noise" (no project imports)
    "noise",
    # what is asked: workload, costs, settings, expectations
    "workload",
    # what we know, not what we saw: kernel names, SDPA backends, trace categories
    "knowledge",
    # the typed record family every later step reads, and the store that keeps records
    "record", "store",
    # read side of traces: source, schema, loader, columnar table
    "trace",
    # pure analysis of a loaded trace
    "analysis.index", "analysis.passes", "analysis.findings", "analysis.attribution",
    "analysis.diff", "analysis",
    # what runs: attention families, how it is measured, whole models (built, located,
    # labelled), then the runs themselves
    "variants", "measure", "models", "run",
    # adapters that hand a run to other libraries' loops (transformers' Trainer)
    "integrations",
    # formatting only; one module per command (a typed request, run -> record: the
    # Python API); the command line; the package's lazy public API
    "render", "commands", "cli", "__main__", "__init__",
)


def unit_of(module: str) -> str:
    """The unit of a dotted module name below ``attnprof`` (``"analysis.passes"`` for
    ``attnprof.analysis.passes.breakdown``; ``"__init__"`` for the package root)."""
    parts = module.split(".")
    if parts[0] != "attnprof":
        raise ValueError(f"{module!r} is not part of attnprof")
    rest = parts[1:]
    if not rest:
        return "__init__"
    for n in range(len(rest), 0, -1):
        candidate = ".".join(rest[:n])
        if candidate in LAYERS:
            return candidate
    raise ValueError(f"{module!r} belongs to no unit of attnprof.layers.LAYERS; add it")
