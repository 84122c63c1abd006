"""Every relative link and anchor in the README and the manual resolves: on GitHub (its
anchors) and, for the manual's pages, in the MkDocs site too (the anchor must be the same in
both, so one link works wherever the page is read)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown_docs import DOCS, REPO, Page, anchors, links, pages, read_page

PAGES = pages()


def _resolve(link_page: Page, target: str) -> tuple[Path, str]:
    path, _, fragment = target.partition("#")
    if not path:
        return link_page.path, fragment
    # Normalised, not resolved: docs/benchmarks.md is a link to benchmarks/README.md and
    # counts as a page of the site.
    return Path(os.path.normpath(link_page.path.parent / unquote(path))), fragment


def _problems(page: Page) -> list[str]:
    problems = []
    for link in links(page):
        target = link.target
        if "://" in target or target.startswith(("mailto:", "data:")):
            continue
        where = f"{page.name}:{link.line}: link {target!r}"
        if target.startswith("/"):
            problems.append(f"{where}: absolute path (write it relative to the page)")
            continue
        path, fragment = _resolve(page, target)
        if not path.exists():
            problems.append(f"{where}: {path} does not exist")
            continue
        if REPO not in path.parents and path != REPO:
            problems.append(f"{where}: points outside the repository")
            continue
        if page.in_site and DOCS not in path.parents:
            problems.append(f"{where}: a page of the site may only link inside docs/ "
                            "(MkDocs cannot follow it); name the file in backticks")
            continue
        if not fragment:
            continue
        if path.suffix != ".md":
            problems.append(f"{where}: an anchor into a file that is not Markdown")
            continue
        github, mkdocs = anchors(read_page(path))
        target_in_site = DOCS in path.parents
        if fragment not in github:
            problems.append(f"{where}: no heading gives the anchor #{fragment} on GitHub "
                            f"(it has: {', '.join(sorted(github))})")
        elif target_in_site and fragment not in mkdocs:
            problems.append(f"{where}: #{fragment} is GitHub's anchor but not the site's; "
                            "reword the heading so both agree")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_links_and_anchors_resolve(page: Page) -> None:
    assert _problems(page) == []


def test_every_page_of_the_manual_is_reached() -> None:
    """The README links into the manual, and each page is in the site's navigation."""
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    readme = read_page(REPO / "README.md")
    linked = {_resolve(readme, link.target)[0] for link in links(readme)}
    assert DOCS / "index.md" in linked
    missing = [p.name for p in PAGES if p.in_site and f" {p.path.relative_to(DOCS)}" not in nav]
    assert missing == []


def test_the_checker_catches_broken_links(tmp_path: Path) -> None:
    """The checks above fail where they should: a missing file, a wrong anchor, an anchor
    MkDocs spells differently, a link out of the site."""
    page_path = DOCS / "index.md"
    page = read_page(page_path)
    page.prose = [(1, "[a](nowhere.md) [b](comparison.md#no-such-heading) "
                      "[c](../README.md) [d](https://example.org/x)")]
    found = _problems(page)
    assert len(found) == 3, found
    assert "does not exist" in found[0]
    assert "no heading gives the anchor" in found[1]
    assert "may only link inside docs/" in found[2]
    heading = tmp_path / "h.md"
    heading.write_text("# Budgets (`--budgets FILE`)\n", encoding="utf-8")
    github, mkdocs = anchors(read_page(heading))
    assert github == {"budgets---budgets-file"} and mkdocs == {"budgets-budgets-file"}
