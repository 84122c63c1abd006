"""What ``attnprof analyze`` imports: only what its path uses (issue 32).

Start-up is most of a small trace's analysis, so the modules a fresh process has loaded
when ``analyze`` returns are checked as a set, not timed (a time would flake on a shared
machine; a set does not): no torch, no plotting or templating library, no SQLite with
``--no-store``, no model attribution for a trace without model labels, and at most
:data:`PROJECT_MODULES_BUDGET` project modules.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: Project modules loaded by ``analyze TRACE --no-store`` of a CPU trace: 133 when this
#: test was written (2026-12-04; 149 before the attribution and the store were made lazy).
#: A new module on the path is fine; raise the budget in the same commit, and say why.
#: 140 -> 150: argparse builds every command's parser, and the workload flags gained the
#: mask and lengths checks (spec.masking, spec.lengths, cli.paged_args, precision_args,
#: config_args, model_grid, pricing): small plain modules, none of the heavy ones above.
#: 150 -> 130 (129 then): a run builds only its own command's parser (cli.main), so the
#: other commands' modules and their flag helpers are not imported.
PROJECT_MODULES_BUDGET = 130

#: Top-level packages the analyze path never uses.
NEVER = ("torch", "scipy", "pandas", "matplotlib", "jinja2", "transformers", "ray",
         "plotly", "hta")
#: Project and standard-library modules it does not use on a plain (unlabelled) trace with
#: ``--no-store``: the model attribution, the store's SQLite side, anything that runs.
NOT_HERE = ("attnprof.analysis.attribution", "attnprof.store.store", "sqlite3",
            "attnprof.variants", "attnprof.models", "attnprof.run.compare",
            "attnprof.integrations", "attnprof.analysis.diff", "attnprof.analysis.ranks",
            "attnprof.commands.diff", "attnprof.cli.compare_cmd", "attnprof.cli.check_cmd",
            "attnprof.cli.workload_args", "attnprof.cli.sweep_cmd", "statistics", "html")

_CODE = """
import contextlib, io, json, sys
from attnprof.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    status = main(['analyze', sys.argv[1], '--no-store'])
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""


def _modules_after_analyze(trace: Path) -> list[str]:
    run = subprocess.run([sys.executable, "-c", _CODE, str(trace)], capture_output=True,
                         text=True, check=True)
    said = json.loads(run.stdout.strip().splitlines()[-1])
    assert said["status"] == 0, run.stderr
    return list(said["modules"])


def test_analyze_imports_only_what_its_path_uses(public_traces: Path) -> None:
    modules = _modules_after_analyze(public_traces / "cpu_only.json.gz")
    loaded = set(modules)
    assert not [m for m in NEVER if m in loaded]
    unused = [m for m in modules if any(m == n or m.startswith(n + ".") for n in NOT_HERE)]
    assert unused == []
    project = [m for m in modules if m == "attnprof" or m.startswith("attnprof.")]
    assert len(project) <= PROJECT_MODULES_BUDGET, (
        f"{len(project)} project modules at analyze's start-up (budget "
        f"{PROJECT_MODULES_BUDGET}): {project}")
