"""File names are never links of their own choosing: the HTML report of a folder holding
traces named with ``javascript:``, ``data:``, quotes, ``<``, ``&`` and a bidi override,
opened in headless Chromium, has only relative ``file:`` links (to the files themselves),
no URL attribute with a scheme a name chose, no element made from a name, and a
Content-Security-Policy under which no inline handler or ``javascript:`` URL runs — while
its own scripts draw every plot."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from chromium import open_page

from attnprof.cli.main import main

NAMES = [
    "javascript:alert(document.domain),{}.json",
    "data:text,html;base64,PHNjcmlwdD4=.json",
    "q\"uo'te.json",
    "<img src=x onerror=alert(1)>.json",
    "a&amp;b.json",
    "\u202egnp.json",
]
FOLDER = "javascript:alert(1)"  # a folder's name leads every path of the report

#: Before the page's own scripts: count alerts, and record every policy violation.
BEFORE = """window.__alerts = 0; window.alert = () => { window.__alerts += 1; };
window.__violations = [];
document.addEventListener("securitypolicyviolation",
  e => window.__violations.push(e.violatedDirective + " " + e.blockedURI));"""
#: Every attribute of every element (HTML and SVG) whose value could be a URL.
URL_ATTRIBUTES = """JSON.stringify(Array.from(document.querySelectorAll("*")).flatMap(
  el => Array.from(el.attributes).filter(a => /^(href|xlink:href|src|srcset|action|
formaction|data|poster|background|ping|cite|longdesc|manifest|codebase|style)$/.test(a.name)
    || a.name.startsWith("on")).map(a => [el.tagName, a.name, a.value])))""".replace("\n", "")
LINKS = """JSON.stringify(Array.from(document.querySelectorAll("a[href]")).map(
  a => [a.getAttribute("href"), a.href, a.protocol, !!a.closest(".vega-actions")]))"""
FORMS = 'JSON.stringify(Array.from(document.forms, f => f.className + ":" + f.elements.length))'
TAGS = 'JSON.stringify(Array.from(new Set(Array.from(document.querySelectorAll("*"), ' \
       'e => e.tagName.toLowerCase()))))'
POLICY = 'document.querySelector("meta[http-equiv=Content-Security-Policy]").content'
#: Once drawn: an inline handler and a javascript: URL, made now, must not run.
TRY_INLINE = """(() => { const b = document.createElement("button");
  b.setAttribute("onclick", "window.__ran = 'handler'"); document.body.appendChild(b);
  b.click();
  const a = document.createElement("a");
  a.href = "javascript:void(window.__ran = (window.__ran || '') + 'url')";
  document.body.appendChild(a); a.click();
  return new Promise(r => setTimeout(() => r(String(window.__ran)), 200)); })()"""

VIOLATIONS = "JSON.stringify(window.__violations)"
REFUSED = re.compile(r"^(Executing inline event handler|Running the JavaScript URL) violates the "
                     r"following Content Security Policy directive 'script-src .* The action "
                     r"has been blocked\.$")


@pytest.fixture(scope="module")
def hostile_folder(tmp_path_factory: pytest.TempPathFactory, public_traces: Path) -> Path:
    """``FOLDER`` holding one real CPU trace under each of ``NAMES``."""
    root = tmp_path_factory.mktemp("hostile-names")
    folder = root / FOLDER
    folder.mkdir()
    data = gzip.decompress((public_traces / "cpu_only.json.gz").read_bytes())
    for name in NAMES:
        (folder / name).write_bytes(data)
    return folder


@pytest.mark.parametrize("where", ["inside", "above"])
def test_a_folder_of_hostile_names_makes_no_live_link(
        where: str, hostile_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Inside the folder the paths are the bare names; above it, each starts "javascript:".
    # The page goes where the command ran: its links are the paths as the run wrote them.
    here = hostile_folder if where == "inside" else hostile_folder.parent
    monkeypatch.chdir(here)
    page = here / f"report-{where}.html"
    assert main(["analyze", "." if where == "inside" else FOLDER, "--html", str(page),
                 "--no-store"]) == 0
    view = open_page(page, before=BEFORE, evaluate={
        "urls": URL_ATTRIBUTES, "links": LINKS, "tags": TAGS, "forms": FORMS,
        "policy": POLICY,
        "drawn": VIOLATIONS, "ran": TRY_INLINE, "violations": VIOLATIONS})
    # The page's own scripts ran and drew every plot, offline, with nothing refused; the
    # only errors are the refusals of what TRY_INLINE made.
    assert json.loads(view.values["drawn"]) == [] and view.requests == []
    assert [e for e in view.console_errors if not REFUSED.search(e)] == []
    figures = view.dom["figures"]
    assert figures and all(f["drawn"] == "yes" and f["svg"] for f in figures)
    # Every link is to a file beside the page: the trace itself, by its exact name; the
    # plots have no action menus (vega-embed's "Save as SVG/PNG": --plots writes images).
    links = json.loads(view.values["links"])
    menus = [link for link in links if link[3]]
    assert menus == []
    links = [link for link in links if not link[3]]
    assert len(links) == len(NAMES)
    targets = []
    for raw, resolved, protocol, _menu in links:
        assert protocol == "file:" and not urlsplit(raw).scheme and raw.startswith("./")
        targets.append(Path(unquote(urlsplit(resolved).path)))
    assert sorted(t.name for t in targets) == sorted(NAMES)
    assert all(t.parent == hostile_folder for t in targets)
    # No URL-bearing attribute anywhere (HTML or the plots' SVG), nor any inline handler,
    # holds a javascript:, data: or vbscript: URL.
    for tag, name, value in json.loads(view.values["urls"]):
        squeezed = re.sub(r"[\s\x00-\x1f]", "", value).lower()
        assert not name.startswith("on"), (tag, name, value)
        assert not squeezed.startswith(("javascript:", "data:", "vbscript:")), (tag, name)
    # No element was made from a name: no <img> and no <b>, and each name is text.
    tags = set(json.loads(view.values["tags"]))
    assert not tags & {"img", "b", "iframe", "object", "embed", "base"}
    assert json.loads(view.values["forms"]) == ["vega-bindings:0"] * len(figures)  # Vega's
    assert view.dom["images"] == 0 and view.dom["alerts"] == 0
    for name in ("javascript:alert(document.domain),{}.json", "q\"uo'te.json",
                 "<img src=x onerror=alert(1)>.json", "a&amp;b.json", "\\u202egnp.json"):
        assert name in view.text
    # The policy: scripts by nonce, never 'unsafe-inline'; a handler or javascript: URL
    # made in the page is refused (and reported), not run.
    script_src = re.search(r"script-src ([^;]*)", view.values["policy"])
    assert script_src is not None and "'unsafe-inline'" not in script_src.group(1)
    assert re.search(r"'nonce-[A-Za-z0-9_-]{16,}'", script_src.group(1))
    assert view.values["ran"] == "undefined"
    violations = json.loads(view.values["violations"])
    assert len(violations) == 2 and all(v.startswith("script-src") for v in violations)


def test_each_page_has_a_fresh_nonce_on_its_own_scripts_only(hostile_folder: Path) -> None:
    from attnprof.analysis.analyze import analyze_files
    from attnprof.render import HtmlRenderer

    record = analyze_files([str(hostile_folder / NAMES[0])])
    first, second = HtmlRenderer().render(record), HtmlRenderer().render(record)
    nonces = [re.findall(r"'nonce-([^']+)'", page) for page in (first, second)]
    assert len(nonces[0]) == 1 and len(nonces[1]) == 1 and nonces[0] != nonces[1]
    # Exactly the two scripts that run carry it; the JSON blocks are data, not scripts.
    assert first.count(f'nonce="{nonces[0][0]}"') == 2
    assert len(re.findall(r"<script(?![^>]*application/json)", first)) == 2


def test_every_odd_name_links_to_itself_and_an_undecodable_one_is_one_line(
        public_traces: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A newline, controls, a backslash, ``%``, ``#``, ``?`` and a path longer than the page
    shows: each link, decoded, is the file's own path; bytes that are not UTF-8 are
    refused in one line before anything is read."""
    import html
    import os

    data = gzip.decompress((public_traces / "cpu_only.json.gz").read_bytes())
    folder = tmp_path / ("D" * 200)  # with the longest name, past the 400 characters shown
    folder.mkdir()
    names = ["a\nb.json", "c\x01\x1b[31m.json", "back\\slash.json", "sp ace%20#frag?q.json",
             "L" * 240 + ".json"]
    for name in names:
        (folder / name).write_bytes(data)
    monkeypatch.chdir(tmp_path)
    page = tmp_path / "report.html"
    assert main(["analyze", folder.name, "--html", str(page), "--no-store"]) == 0
    hrefs = [html.unescape(h) for h in re.findall(r'<a href="([^"]*)"', page.read_text())]
    assert all(h.startswith(f"./{folder.name}/") for h in hrefs)
    assert sorted(unquote(h)[2:] for h in hrefs) == sorted(f"{folder.name}/{n}" for n in names)
    # A name in another encoding: one line naming it, exit 2, no page.
    (folder / os.fsdecode(b"latin1-caf\xe9.json")).write_bytes(data)
    page.unlink()
    capsys.readouterr()
    assert main(["analyze", folder.name, "--html", str(page), "--no-store"]) == 2
    err = capsys.readouterr().err
    assert "caf\\udce9.json" in err and "not UTF-8" in err and len(err.splitlines()) == 1
    assert not page.exists()


@pytest.mark.parametrize(("path", "href"), [
    ("javascript:alert(1)", "./javascript%3Aalert%281%29"),
    ("/abs/dir/t.json", "/abs/dir/t.json"),
    ("//host/share/t.json", "/host/share/t.json"),  # never a host
    ("../up/t.json", "./../up/t.json"),
    ("a b/#?%.json", "./a%20b/%23%3F%25.json"),
])
def test_file_href_is_a_relative_reference(path: str, href: str) -> None:
    from attnprof.render.html.links import file_href

    assert file_href(path) == href
    assert not urlsplit(href).scheme and not urlsplit(href).netloc
