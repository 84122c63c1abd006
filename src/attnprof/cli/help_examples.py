"""The end of each command's ``--help``: two or three examples and the command's manual page.

One table for every command, applied where :func:`attnprof.cli.main.build_parser` builds
the subparsers (the command modules stay as they are). ``tests/cli/test_help_examples.py``
parses every example with the real parser and checks that each page exists in docs/.
"""

from __future__ import annotations

import argparse
import textwrap

__all__ = ["EXAMPLES", "PAGES", "SITE_URL", "ExamplesFormatter", "add_examples", "page_link"]

#: The manual's address, as mkdocs.yml's ``site_url`` says (None: it has none, and the help
#: names the page's path in the repository). A test keeps the two the same.
SITE_URL: str | None = None

#: Each command's examples, as typed (``attnprof COMMAND ...``), with what they do.
EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "compare": (
        ("attnprof compare --seq 2048 --dtype bf16 --json run.json",
         "every built-in variant on your shape, the record kept"),
        ("attnprof compare --variants sdpa,flex --html compare.html",
         "two variants, and a report that opens offline"),
        ("attnprof compare --budgets examples/budgets/cpu-attention.toml",
         "exit 1 when a row breaks a budget (CI)"),
    ),
    "profile": (
        ("attnprof profile naive sdpa --seq 256 --out traces/",
         "measure, trace and explain two variants"),
        ("attnprof profile sdpa --mode forward+backward --html profile.html",
         "the backward pass too, as a report"),
    ),
    "analyze": (
        ("attnprof analyze traces/naive.pt.trace.json.gz",
         "explain one torch.profiler trace"),
        ("attnprof analyze examples/traces/sampled_ranks/",
         "the ranks of one distributed run, read together"),
        ("attnprof analyze trace.json.gz --region 'layer\\d+' --markdown summary.md",
         "your own record_function regions, summed up for CI"),
    ),
    "check": (
        ("attnprof check --expect examples/expectations/inplace-mask.toml naive",
         "measure and trace a variant, then check what ran"),
        ("attnprof check --expect examples/expectations/fused-attention.toml t.json",
         "check a trace you already have"),
    ),
    "model": (
        ("attnprof model gpt2 --layers 2 --seq 128 --attn eager,sdpa",
         "attention's share of a small GPT-2, two implementations"),
        ("attnprof model llama --phase prefill,decode --kv-heads 8,2",
         "prefill and decode, MHA against GQA"),
        ("attnprof model --model-path ./my-model --seq 512 --html model.html",
         "your own transformers config (never downloaded)"),
    ),
    "sweep": (
        ("attnprof sweep --variants naive,sdpa --seq 256..1024x2",
         "three lengths, a worker per point, the scaling fitted"),
        ("attnprof sweep --variants sdpa --seq 512 --batch 1,4,16 --plot sweep.svg",
         "batch sizes, plotted"),
        ("attnprof sweep --resume sweep.json", "finish a stopped sweep"),
    ),
    "limits": (
        ("attnprof limits --variants naive,sdpa --memory-budget 256MiB --max 2048",
         "the longest sequence each fits in 256 MiB"),
        ("attnprof limits --variants sdpa --field batch --seq 2048 --memory-budget 8GB",
         "the largest batch at a fixed length"),
    ),
    "recommend": (
        ("attnprof recommend --seq 256,1024 --variants naive,sdpa --max-latency 50ms",
         "the fastest variant per shape within a latency limit"),
        ("attnprof recommend --from sweep.json --max-memory 2GiB",
         "from a sweep already run"),
    ),
    "runs": (
        ("attnprof runs --since 7d", "the runs of the last week"),
        ("attnprof runs --kind compare --label baseline --json", "some, as JSON"),
    ),
    "show": (
        ("attnprof show baseline", "a stored run, by label, id or id prefix"),
        ("attnprof show run.json --format markdown", "a record file as Markdown"),
    ),
    "diff": (
        ("attnprof diff baseline candidate --fail-on-regression 5",
         "two stored runs judged row by row; exit 1 on a regression over 5%"),
        ("attnprof diff old.json new.json --markdown diff.md", "two record files, summed up"),
        ("attnprof diff traces/naive.pt.trace.json.gz traces/sdpa.pt.trace.json.gz",
         "two traces, op by op"),
    ),
    "env": (
        ("attnprof env", "this machine and its measured ceilings"),
        ("attnprof env --refresh --dtypes float32,bfloat16", "measure the ceilings again"),
    ),
    "report": (
        ("attnprof report run.json -o run.html", "one record's page"),
        ("attnprof report old.json new.json -o both.html --plots figures/",
         "several on one page, and their figures as images"),
    ),
    "project": (
        ("attnprof project baseline --to h100-sxm,a100-80gb",
         "bound a stored comparison's rows on other hardware"),
        ("attnprof project run.json --to h200 --json projection.json", "a record file"),
    ),
}

#: Each command's page of the manual (docs/).
PAGES: dict[str, str] = {
    "compare": "comparison.md", "profile": "traces.md", "analyze": "traces.md",
    "check": "traces.md", "model": "models.md", "sweep": "scale.md", "limits": "scale.md",
    "recommend": "scale.md", "runs": "history.md", "show": "reports.md",
    "diff": "history.md", "env": "history.md", "report": "reports.md", "project": "cost.md",
}


def page_link(page: str) -> str:
    """Where the manual's ``page`` is read: on the site, else in the repository."""
    if SITE_URL:
        return f"{SITE_URL.rstrip('/')}/{page.removesuffix('.md')}/"
    return f"docs/{page} (in the attnprof repository)"


class ExamplesFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions wrapped to the terminal as usual; an indented block (the examples) is
    kept as written, so each example stays on its own line to copy."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = text.split("\n\n")
        filled = []
        for paragraph in paragraphs:
            lines = paragraph.splitlines()
            if any(line.startswith(" ") for line in lines):
                filled.append("\n".join(indent + line for line in lines))
            else:
                filled.append(textwrap.fill(" ".join(paragraph.split()), width,
                                            initial_indent=indent, subsequent_indent=indent))
        return "\n\n".join(filled)


def epilog_of(name: str) -> str:
    """The examples and manual page of command ``name``, as the help's last lines."""
    lines = ["examples:"]
    for command, what in EXAMPLES[name]:
        lines += [f"  {command}", f"      {what}"]
    return "\n".join(lines) + f"\n\nmanual: {page_link(PAGES[name])}"


def add_examples(parser: argparse.ArgumentParser, name: str) -> None:
    """End ``parser``'s help (command ``name``'s) with its examples and manual page, after
    what the command's own epilog says."""
    parser.formatter_class = ExamplesFormatter
    parser.epilog = "\n\n".join(part for part in (parser.epilog, epilog_of(name)) if part)
