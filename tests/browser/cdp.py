"""Drive headless Chromium over the Chrome DevTools Protocol: trusted key presses and mouse drags.

The screenshot/probe helpers (:mod:`tests.browser.chromium`) load a page once; the review page needs a
person's input. :class:`Page` starts Chromium with ``--remote-debugging-port=0``, reads the port from the
``DevTools listening on ws://...`` line it prints on stderr, connects to the page target's WebSocket
(``/json/list``) and sends CDP commands: ``Runtime.evaluate``, ``Input.dispatchKeyEvent`` and
``Input.dispatchMouseEvent`` (https://chromedevtools.github.io/devtools-protocol/). Input events sent
this way are trusted events, as a keyboard's and a mouse's are. Loopback only.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from typing import Any

from websockets.sync.client import connect

from tests.browser.chromium import FLAGS, binary

_FLAGS = [f for f in FLAGS if not f.startswith("--virtual-time-budget")]


class Page:
    """One Chromium process with one page at ``url``; use as a context manager (the process is ended)."""

    def __init__(self, url: str):
        self.profile = tempfile.mkdtemp(prefix="longdoc-cdp-")
        self.proc = subprocess.Popen([binary(), *_FLAGS, f"--user-data-dir={self.profile}",
                                      "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1", url],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = self._port()
        deadline = time.monotonic() + 30
        while True:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
                pages = [t for t in json.load(response) if t.get("type") == "page"]
            if pages or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert pages, "Chromium opened no page"
        self.ws = connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=30).__enter__()
        self.ids = itertools.count(1)

    def _port(self) -> int:
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                break
            found = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if found:
                return int(found.group(1))
        raise AssertionError("Chromium did not open its DevTools port")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and return its ``result`` (events in between are skipped)."""
        ident = next(self.ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=60))
            if message.get("id") == ident:
                assert "error" not in message, message
                return message.get("result", {})

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited); raises on a script error."""
        result = self.send("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        """Poll ``expression`` until it is truthy; returns its value. Fails after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for: {expression}")

    def press(self, key: str) -> None:
        """Press and release one printable key (``"a"``, ``"]"``) as a keyboard does."""
        code = ord(key.upper()) if key.isalpha() else ord(key)
        self.send("Input.dispatchKeyEvent", type="keyDown", key=key, text=key, windowsVirtualKeyCode=code)
        self.send("Input.dispatchKeyEvent", type="keyUp", key=key, windowsVirtualKeyCode=code)

    def drag(self, start: tuple[float, float], end: tuple[float, float]) -> None:
        """Click at ``start`` (collapsing any selection: a press inside one would drag its text), then press
        the left mouse button there, move to ``end`` in steps and release (CSS pixels)."""
        x0, y0 = start
        x1, y1 = end
        self.send("Input.dispatchMouseEvent", type="mouseMoved", x=x0, y=y0)
        self.send("Input.dispatchMouseEvent", type="mousePressed", x=x0, y=y0, button="left", buttons=1, clickCount=1)
        self.send("Input.dispatchMouseEvent", type="mouseReleased", x=x0, y=y0, button="left", buttons=0, clickCount=1)
        self.send("Input.dispatchMouseEvent", type="mousePressed", x=x0, y=y0, button="left", buttons=1, clickCount=1)
        for n in range(1, 11):
            self.send("Input.dispatchMouseEvent", type="mouseMoved", x=x0 + (x1 - x0) * n / 10,
                      y=y0 + (y1 - y0) * n / 10, button="left", buttons=1)
        self.send("Input.dispatchMouseEvent", type="mouseReleased", x=x1, y=y1, button="left", buttons=0, clickCount=1)

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.ws.__exit__(None, None, None)
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)
