"""Screenshot the first screen of each record kind's HTML report, for docs/reports.md.

    .venv/bin/python scripts/report_screenshots.py                 # every kind (minutes)
    .venv/bin/python scripts/report_screenshots.py compare diff    # some, by name
    .venv/bin/python scripts/report_screenshots.py --list

Each kind's record is made by a small real command (``attnprof ... --html NAME.html``) in a
scratch folder with the repository's ``examples/`` beside it, in the order below (``diff``
reads the traces ``profile`` wrote, ``recommend`` the sweep), and the page is photographed
by headless Chromium (``--screenshot``) at 1280x800, the first screen a reader sees:
``docs/screenshots/NAME.png``. The figures are whatever this machine measured: run it on a
quiet machine, as ``scripts/readme_examples.py``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "screenshots"
#: The first screen: a laptop's browser window.
WINDOW = (1280, 800)

#: Per kind, the command that makes its page (``--html NAME.html`` is added), and the exit
#: statuses it may end with (check exits 1 on its mismatch; model 3 when a share is noisy).
KINDS: dict[str, tuple[str, tuple[int, ...]]] = {
    "compare": ("compare --variants naive,sdpa,sdpa-math,flex-eager --seq 512", (0, 3)),
    "profile": ("profile naive sdpa --seq 256 --out traces/", (0, 3)),
    "analyze": ("analyze examples/traces/a100_trace_control.json.gz", (0, 3)),
    "ranks": ("analyze examples/traces/sampled_ranks/", (0, 3)),
    "check": ("check --expect examples/expectations/inplace-mask.toml naive", (1,)),
    "model": ("model gpt2 --layers 2 --seq 128 --attn eager,sdpa", (0, 3)),
    "sweep": ("sweep --variants naive,sdpa --seq 128..512x2 --json sweep.json", (0,)),
    "recommend": ("recommend --from sweep.json --max-latency 50ms", (0,)),
    "limits": ("limits --variants naive,sdpa --memory-budget 64MiB --max 1024 --step 128 "
               "--mode forward", (0,)),
    "diff": ("diff traces/naive.pt.trace.json.gz traces/sdpa.pt.trace.json.gz", (0,)),
}
#: What a kind reads from another's run (made first, also when only this one is asked for).
NEEDS = {"diff": "profile", "recommend": "sweep"}


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("no chromium here (apt-get install -y chromium)")


def make_page(name: str, folder: Path) -> Path:
    """Run kind ``name``'s command in ``folder``; its HTML page."""
    command, statuses = KINDS[name]
    page = folder / f"{name}.html"
    env = {**os.environ, "COLUMNS": "120", "ATTNPROF_STORE": str(folder / "runs.db")}
    argv = [sys.executable, "-m", "attnprof", *shlex.split(command), "--html", page.name]
    print(f"{name}: attnprof {command}", file=sys.stderr)
    done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode not in statuses or not page.exists():
        sys.exit(f"{name}: exit status {done.returncode}, expected {statuses}:\n"
                 f"{done.stderr[-2000:]}")
    return page


def screenshot(page: Path, png: Path, browser: str) -> None:
    """The first screen of ``page`` as ``png``, once its plots have had time to draw."""
    with tempfile.TemporaryDirectory(prefix="attnprof-shot-") as profile:
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--host-resolver-rules=MAP * ~NOTFOUND",
                        f"--user-data-dir={profile}", "--force-device-scale-factor=1",
                        f"--window-size={WINDOW[0]},{WINDOW[1]}",
                        "--virtual-time-budget=10000", f"--screenshot={png}",
                        page.resolve().as_uri()],
                       check=True, capture_output=True, timeout=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="kinds to photograph (default: all)")
    parser.add_argument("--list", action="store_true", help="list the kinds and exit")
    args = parser.parse_args()
    if args.list:
        for name, (command, _) in KINDS.items():
            print(f"{name:10} attnprof {command}")
        return 0
    unknown = set(args.names) - set(KINDS)
    if unknown:
        parser.error(f"no such kind: {', '.join(sorted(unknown))}")
    wanted = set(args.names or KINDS)
    to_run = wanted | {NEEDS[n] for n in wanted if n in NEEDS}
    browser = chromium()
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="attnprof-screens-") as scratch:
        folder = Path(scratch)
        (folder / "examples").symlink_to(REPO / "examples")
        for name in KINDS:  # in this order: what a kind reads is made before it
            if name not in to_run:
                continue
            page = make_page(name, folder)
            if name in wanted:
                shot = OUT / f".{name}.partial.png"
                screenshot(page, shot, browser)
                os.replace(shot, OUT / f"{name}.png")  # whole, never half-written
                print(f"  -> {(OUT / f'{name}.png').relative_to(REPO)} "
                      f"({(OUT / f'{name}.png').stat().st_size // 1024} KiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
