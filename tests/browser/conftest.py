"""Browser tests (``make test-browser``): real headless Chromium; not part of ``make test``."""
