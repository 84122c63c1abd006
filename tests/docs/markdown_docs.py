"""Reading the project's Markdown the way the docs tests need it: the pages (README, the
manual under ``docs/``, the measured figures), their headings' anchors as GitHub and MkDocs
make them, their links, their code, and the ``attnprof`` command lines they show."""

from __future__ import annotations

import re
import shlex
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ATTR_ID = re.compile(r"\{[^}]*#([\w-]+)[^}]*\}\s*$")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target "title") and ![alt](target); the text may hold code spans and brackets.
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


@dataclass
class CodeBlock:
    """A fenced code block: its info string (``python``, ``console``, ...) and text."""

    info: str
    text: str
    line: int


@dataclass
class Page:
    """One Markdown file, split into prose (code blocks blanked) and code blocks."""

    path: Path
    text: str
    prose: list[tuple[int, str]] = field(default_factory=list)
    blocks: list[CodeBlock] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.path.relative_to(REPO))

    @property
    def in_site(self) -> bool:
        """Whether MkDocs renders this page (it is under ``docs/``)."""
        return self.path.parent == DOCS or DOCS in self.path.parents


def read_page(path: Path) -> Page:
    page = Page(path=path, text=path.read_text(encoding="utf-8"))
    fence: str | None = None
    info, start, body = "", 0, []
    for number, line in enumerate(page.text.splitlines(), 1):
        match = _FENCE.match(line)
        if fence is None and match:
            fence, info, start, body = match.group(2), match.group(3).strip(), number, []
        elif fence is not None and match and match.group(2).startswith(fence) \
                and not match.group(3).strip():
            page.blocks.append(CodeBlock(info=info, text="\n".join(body), line=start))
            fence = None
        elif fence is not None:
            body.append(line)
        else:
            page.prose.append((number, line))
    return page


def pages() -> list[Page]:
    """Every page a reader meets: README, each page of the manual (the measured figures
    through ``docs/benchmarks.md``, a link to ``benchmarks/README.md``)."""
    paths = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]
    return [read_page(p) for p in paths]


def strip_inline(text: str) -> str:
    """A heading's text as rendered: code spans kept as their text, links as their text,
    emphasis and HTML removed."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = _INLINE_CODE.sub(lambda m: m.group(2), text)
    text = re.sub(r"<[^>]+>", "", text)
    return text.replace("**", "").replace("*", "")


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, each space a
    hyphen (not collapsed)."""
    text = strip_inline(heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def mkdocs_slug(heading: str) -> str:
    """The anchor Python-Markdown's ``toc`` extension (MkDocs) gives a heading."""
    text = unicodedata.normalize("NFKD", strip_inline(heading))
    text = text.encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _dedup(slugs: list[str], sep: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for slug in slugs:
        if slug in seen:
            seen[slug] += 1
            out.add(f"{slug}{sep}{seen[slug]}")
        else:
            seen[slug] = 0
            out.add(slug)
    return out


def anchors(page: Page) -> tuple[set[str], set[str]]:
    """The anchors of a page's headings: (GitHub's, MkDocs'); an explicit ``{#id}`` counts
    for MkDocs."""
    github, mkdocs, explicit = [], [], set()
    for _, line in page.prose:
        match = _HEADING.match(line)
        if not match:
            continue
        heading = match.group(2)
        attr = _ATTR_ID.search(heading)
        if attr:
            explicit.add(attr.group(1))
            heading = heading[:attr.start()].rstrip()
        github.append(github_slug(heading))
        mkdocs.append(mkdocs_slug(heading))
    return _dedup(github, "-"), _dedup(mkdocs, "_") | explicit


@dataclass(frozen=True)
class Link:
    page: Page
    line: int
    target: str


def links(page: Page) -> Iterator[Link]:
    """The links of a page's prose (code spans excluded)."""
    for number, line in page.prose:
        bare = _INLINE_CODE.sub("", line)
        for match in _LINK.finditer(bare):
            yield Link(page=page, line=number, target=match.group(1))


def inline_code(page: Page) -> Iterator[tuple[int, str]]:
    """Every code span of the prose, with its line."""
    for number, line in page.prose:
        for match in _INLINE_CODE.finditer(line):
            yield number, match.group(2).strip()


def _logical_lines(text: str) -> Iterator[str]:
    """Lines of a code block with backslash continuations joined."""
    pending = ""
    for raw in text.splitlines():
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        yield pending + raw
        pending = ""
    if pending:
        yield pending


_COMMAND = re.compile(r"^(?:\$\s+)?(?:[A-Z_]+=\S+\s+)*(?:\S*/)?attnprof(?:\s+(.*))?$")


def command_lines(page: Page) -> Iterator[tuple[int, list[str]]]:
    """Every ``attnprof ...`` command a page shows — a line of a code block (a ``$ ``
    prompt, environment assignments and a ``.venv/bin/`` prefix allowed), or a whole code
    span — as its arguments after ``attnprof``; comments and pipes cut off."""
    candidates: list[tuple[int, str]] = []
    for block in page.blocks:
        if block.info in ("python", "toml", "json"):
            continue
        for offset, line in enumerate(_logical_lines(block.text), 1):
            candidates.append((block.line + offset, line.strip()))
    for number, code in inline_code(page):
        candidates.append((number, code))
    for number, line in candidates:
        # A command chained after set-up (`... && .venv/bin/attnprof`): its last part.
        line = line.split("&&")[-1].strip()
        match = _COMMAND.match(line)
        if not match:
            continue
        rest = re.split(r"\s(?:#|\||2?>)", match.group(1) or "")[0]
        try:
            yield number, shlex.split(rest)
        except ValueError:
            yield number, rest.split()
