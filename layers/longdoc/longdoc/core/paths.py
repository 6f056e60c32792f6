"""File-system helpers shared by the local blob store and local mode (no adapter, no I/O of their own)."""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def too_long_is_absent(call: Callable[[], T], absent: T) -> T:
    """``call()`` (a file-system read or test), or ``absent`` when the file system says a name is too
    long (``ENAMETOOLONG``; 255 bytes a name on ext4, APFS and NTFS): such a file cannot exist.
    Any other ``OSError`` propagates."""
    try:
        return call()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return absent
        raise
