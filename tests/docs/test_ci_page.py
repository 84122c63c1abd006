"""docs/ci.md's GitHub Actions workflow is valid YAML, a workflow GitHub would run, and does
what the page says: ``compare --budgets`` writing the step summary with ``--markdown``, and
``diff --fail-on-regression`` gating. (Each ``attnprof`` line's flags are checked against
``--help`` by test_doc_commands.py, as on every page.)"""

from __future__ import annotations

import shlex

import yaml
from markdown_docs import DOCS, read_page


def _workflow() -> dict[str, object]:
    page = read_page(DOCS / "ci.md")
    blocks = [b for b in page.blocks if b.info == "yaml"]
    assert len(blocks) == 1
    loaded = yaml.safe_load(blocks[0].text)
    assert isinstance(loaded, dict)
    return loaded


def test_the_workflow_is_valid_yaml_with_the_gate() -> None:
    workflow = _workflow()
    assert {"name", "jobs"} <= set(workflow) and True in workflow  # YAML 1.1 reads `on` as True
    (job,) = workflow["jobs"].values()  # type: ignore[attr-defined]
    steps = job["steps"]
    assert job["runs-on"] and all("uses" in s or "run" in s for s in steps)
    commands = [shlex.split(line.strip()) for s in steps for line in s.get("run", "").splitlines()
                if line.strip().startswith("attnprof ")]
    compare = [c for c in commands if c[1] == "compare" and "--budgets" in c]
    assert any(c[c.index("--markdown") + 1] == "$GITHUB_STEP_SUMMARY" for c in compare
               if "--markdown" in c)
    diff = [c for c in commands if c[1] == "diff"]
    assert diff and "--fail-on-regression" in diff[0] and "--markdown" in diff[0]
