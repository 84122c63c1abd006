"""Open an HTML file in Debian's headless Chromium and report what a person would see:
console errors, every request the page made, the DOM's tables, plots and findings, and a
screenshot — over the DevTools protocol (websocket-client), no browser automation library.

Every host name is mapped to nothing (``--host-resolver-rules``) and background traffic is
off, so a page that tried to fetch anything fails loudly in ``requests`` rather than
reaching the network.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-default-apps", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--remote-debugging-port=0", "--window-size=1300,1800")

#: What the page reports once every plot is drawn (or has failed).
_DOM = """(() => {
  const tables = {};
  document.querySelectorAll("table[data-table]").forEach(t => {
    tables[t.dataset.table] = Array.from(t.tBodies[0].rows).map(
      r => Array.from(r.cells).map(c => c.textContent));
  });
  const figures = Array.from(document.querySelectorAll("figure.plot")).map(f => ({
    name: f.dataset.figure, drawn: f.querySelector("div.vega").dataset.drawn || "",
    svg: !!f.querySelector("svg"), error: !!f.querySelector(".plot-error"),
    text: f.textContent}));
  const findings = Array.from(document.querySelectorAll("li.finding .finding-title")).map(
    e => e.textContent);
  return JSON.stringify({tables, figures, findings,
                         images: document.querySelectorAll("img").length,
                         alerts: window.__alerts || 0,
                         text: document.body.innerText});
})()"""
_DRAWN = """(() => { const boxes = document.querySelectorAll("div.vega");
  return Array.from(boxes).every(b => b.dataset.drawn || b.querySelector(".plot-error")
                                 || b.classList.contains("plot-error")); })()"""


def find_chromium() -> str:
    """The browser, or a skip that says why there is none."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium here (apt-get install -y chromium; .ci/run installs it)")


@dataclass
class PageView:
    """What the browser saw."""

    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dom: dict[str, Any] = field(default_factory=dict)
    screenshot: bytes = b""
    #: The values of the expressions asked for, by name.
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return str(self.dom.get("text", ""))


class _Session:
    def __init__(self, url: str) -> None:
        import websocket  # websocket-client, the test extra

        self.ws = websocket.create_connection(url, timeout=60, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            self.events.append(message)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        return result.get("result", {}).get("value")


class _Browser:
    """One headless Chromium for the whole test session (starting one takes a second or
    more); each page opens in a browser context of its own, as fresh as a new profile:
    no cache, storage or cookies from another page."""

    def __init__(self, timeout_s: float) -> None:
        self.profile = tempfile.mkdtemp(prefix="attnprof-chromium-")
        self.proc = subprocess.Popen(
            [find_chromium(), *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout_s
        while not port_file.exists() or not port_file.read_text().strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        self.port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/version",
                                    timeout=30) as r:
            self.session = _Session(json.load(r)["webSocketDebuggerUrl"])

    def alive(self) -> bool:
        return self.proc.poll() is None

    @contextlib.contextmanager
    def page(self) -> Iterator[_Session]:
        """A blank page in a new browser context, closed with its context after (a
        browser that cannot close them is closed itself: the next page starts another,
        and what went wrong in the page is the error that is raised)."""
        context = self.session.call("Target.createBrowserContext")["browserContextId"]
        target = page = None
        try:
            target = self.session.call("Target.createTarget", url="about:blank",
                                       browserContextId=context)["targetId"]
            page = _Session(f"ws://127.0.0.1:{self.port}/devtools/page/{target}")
            yield page
        finally:
            try:
                if page is not None:
                    page.ws.close()
                if target is not None:
                    self.session.call("Target.closeTarget", targetId=target)
                self.session.call("Target.disposeBrowserContext", browserContextId=context)
            except Exception:
                self.close()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.session.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


_BROWSER: _Browser | None = None


def _browser(timeout_s: float) -> _Browser:
    """The session's browser, started on first use (again if it has died)."""
    global _BROWSER
    if _BROWSER is None or not _BROWSER.alive():
        if _BROWSER is not None:
            _BROWSER.close()
        _BROWSER = _Browser(timeout_s)
        atexit.register(_BROWSER.close)
    return _BROWSER


def open_page(html: Path, screenshot: Path | None = None, timeout_s: float = 60.0,
              before: str = "", evaluate: dict[str, str] | None = None,
              full_page: bool = False) -> PageView:
    """Load ``html`` in headless Chromium, wait for every plot, and look. ``before`` is a
    script run in the page before its own (e.g. to count ``alert`` calls); ``evaluate``
    names expressions to evaluate in the page once it is drawn. The screenshot is of the
    first screen, or of the whole page with ``full_page`` (seconds on a long page)."""
    deadline = time.monotonic() + timeout_s
    with _browser(timeout_s).page() as session:
        for domain in ("Page", "Runtime", "Log", "Network"):
            session.call(f"{domain}.enable")
        if before:
            session.call("Page.addScriptToEvaluateOnNewDocument", source=before)
        session.call("Page.navigate", url=html.resolve().as_uri())
        while time.monotonic() < deadline:
            if session.evaluate("document.readyState") == "complete" and session.evaluate(
                    _DRAWN):
                break
            time.sleep(0.2)
        else:
            raise RuntimeError(f"the plots of {html} were not drawn in {timeout_s:.0f} s")
        view = PageView(dom=json.loads(session.evaluate(_DOM)))
        view.values = {k: session.evaluate(v) for k, v in (evaluate or {}).items()}
        shot = session.call("Page.captureScreenshot", format="png",
                            captureBeyondViewport=full_page)
        view.screenshot = base64.b64decode(shot["data"])
        if screenshot is not None:
            screenshot.write_bytes(view.screenshot)
        for event in session.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error",
                                                                               "assert"):
                view.console_errors.append(str(params.get("args")))
            elif method == "Runtime.exceptionThrown":
                view.console_errors.append(str(params.get("exceptionDetails")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                view.console_errors.append(str(params["entry"].get("text")))
            elif method == "Network.requestWillBeSent":
                url = params.get("request", {}).get("url", "")
                if not url.startswith(("file:", "data:", "blob:", "about:")):
                    view.requests.append(url)
        return view
