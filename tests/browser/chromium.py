"""Headless Chromium (Debian's ``chromium`` package) for the browser tests: screenshots and a DOM probe.

Each call starts a fresh browser with its own ``--user-data-dir`` and every background
network feature off (there is no network here, and a page must need none). ``probe`` runs a
page with a script appended that writes what the script measures into the DOM, which
``--dump-dom`` prints after the load event.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

WINDOW = (1400, 2400)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         "--force-device-scale-factor=1", f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=10000"]


def binary() -> str:
    """The Chromium executable; fails with how to install it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise AssertionError("chromium not found: `make test-browser` installs it (apt-get install chromium)")
    return found


def _run(extra: list[str], page: Path) -> str:
    with tempfile.TemporaryDirectory(prefix="longdoc-chromium-") as profile:
        proc = subprocess.run([binary(), *FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()],
                              capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def screenshot(page: Path, png: Path) -> Path:
    """A PNG of the page's first WINDOW pixels (CSS px = image px)."""
    _run([f"--screenshot={png}"], page)
    assert png.is_file() and png.stat().st_size > 0
    return png


PROBE_ID = "longdoc-probe"


def probe(page: Path, script: str) -> Any:
    """Load a copy of ``page`` with ``script`` appended; ``script`` must end by setting ``window.__probe``.

    Returns that value (JSON). The script runs on the load event, so images are decoded.
    """
    wrapper = page.with_name(page.stem + ".probe.html")
    runner = (f"<script>window.addEventListener('load', () => {{ {script}; "
              f"const out = document.createElement('pre'); out.id = '{PROBE_ID}'; "
              f"out.textContent = JSON.stringify(window.__probe); document.body.appendChild(out); }});</script>")
    wrapper.write_text(page.read_text(encoding="utf-8").replace("</body>", runner + "</body>"), encoding="utf-8")
    dom = _run(["--dump-dom"], wrapper)
    match = re.search(rf'<pre id="{PROBE_ID}">(.*?)</pre>', dom, re.S)
    assert match, "the probe did not run: " + dom[-500:]
    return json.loads(match.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&amp;", "&"))
