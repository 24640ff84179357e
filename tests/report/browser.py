"""A real headless Chromium driven through the DevTools protocol: load a page, collect its console errors and
exceptions, evaluate an expression, take a full-page screenshot. Debian's `chromium`; websocket-client talks to it.
"""

from __future__ import annotations

import base64
import fcntl
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from process_helpers import REAPED_S, RUN_S

CHROMIUM = "chromium"
INSTALL = ["apt-get", "install", "-y", "--no-install-recommends", CHROMIUM]
INSTALL_LOCK = Path(tempfile.gettempdir()) / "perfplay-chromium-install.lock"
WAIT_S = 120.0  # how long to wait for Chromium to answer at all before the test fails (not a timing check)
WIDTH = 1280


def find_chromium() -> str | None:
    return shutil.which(CHROMIUM)


def install_chromium() -> str:
    """apt-get install Debian's chromium (CI's setup); an AssertionError with apt's output when it cannot. One
    pytest worker at a time (make test runs two): the others wait on a lock, then find it installed."""
    with open(INSTALL_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return find_chromium() or _apt_install()


def _apt_install() -> str:
    for argv in (["apt-get", "update"], INSTALL):
        done = subprocess.run(argv, capture_output=True, text=True, check=False,
                              env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, timeout=RUN_S)
        assert done.returncode == 0, f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout[-2000:]}" \
                                     f"\n{done.stderr[-2000:]}"
    found = find_chromium()
    assert found, f"{' '.join(INSTALL)} succeeded but no {CHROMIUM} is on PATH"
    return found


class Browser:
    """One Chromium process and one page of it; close() stops both (call it in a finally)."""

    def __init__(self, executable: str) -> None:
        import websocket
        self._profile = tempfile.mkdtemp(prefix="perfplay-chromium-")
        self._process = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--remote-debugging-port=0", f"--user-data-dir={self._profile}",
             f"--window-size={WIDTH},900", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        self._ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        self._socket = None
        port = self._port()
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=WAIT_S).read())
        page = next(t for t in targets if t.get("type") == "page")
        self._socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=WAIT_S,
                                                   suppress_origin=True)
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def _port(self) -> int:
        """The port Chromium chose: the first line of DevToolsActivePort in its profile, once it is written."""
        active = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise AssertionError(f"{CHROMIUM} exited {self._process.returncode}: "
                                     f"{self._process.stderr.read().decode(errors='replace')[-2000:]}")
            lines = active.read_text().splitlines() if active.exists() else []
            if lines and lines[0].isdigit():
                return int(lines[0])
            time.sleep(0.1)
        raise AssertionError(f"{CHROMIUM} wrote no {active} within {WAIT_S:g} s")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command and return its result; the events that arrive meanwhile are kept in self.events."""
        assert self._socket is not None
        number = next(self._ids)
        self._socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv())
            if message.get("id") == number:
                assert "error" not in message, f"{method}: {message['error']}"
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method: str) -> dict[str, Any]:
        """The next event named `method` (one that came already counts)."""
        assert self._socket is not None
        for at, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(at)
        while True:
            message = json.loads(self._socket.recv())
            if message.get("method") == method:
                return message
            self.events.append(message)

    def load(self, path: Path) -> None:
        self.call("Page.navigate", url=path.resolve().as_uri())
        self.wait_for("Page.loadEventFired")

    def errors(self) -> list[str]:
        """The console errors, uncaught exceptions and error log entries the page produced."""
        found = []
        for event in self.events:
            params = event.get("params", {})
            if event.get("method") == "Runtime.exceptionThrown":
                found.append(f"exception: {params.get('exceptionDetails', {}).get('text')}")
            elif event.get("method") == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(f"console.{params['type']}: {[a.get('value') for a in params.get('args', [])]}")
            elif event.get("method") == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                found.append(f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}".rstrip())
        return found

    def evaluate(self, expression: str) -> Any:
        answer = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in answer, answer["exceptionDetails"]
        return answer["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        """The whole page, WIDTH pixels wide, as a PNG."""
        self.call("Emulation.clearDeviceMetricsOverride")  # the last page's height would be this one's least
        height = int(self.evaluate("Math.ceil(document.documentElement.getBoundingClientRect().height)"))
        self.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=height, deviceScaleFactor=1, mobile=False)
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            if self._socket is not None:
                self._socket.close()
        finally:
            if self._process.poll() is None:
                os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=REAPED_S)
            if self._process.stderr:
                self._process.stderr.close()
            shutil.rmtree(self._profile, ignore_errors=True)
