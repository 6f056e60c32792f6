"""Stream decryption for PDFs encrypted with the standard security handler and an empty user password.

Only what :mod:`~longdoc.ingest.parse.streams` needs to check a stream's compressed data (PDFium
itself decrypts for text): ISO 32000-1, 7.6.3.3 Algorithm 2 (the file key from the empty user
password, ``/O``, ``/P`` and the first ``/ID`` string; revisions 2-4) and Algorithm 1 (the object
key: the file key, the object and generation numbers, and ``sAlT`` for AES). RC4 (``/V 1``, ``/V 2``
and crypt filter ``/V2``) is done here; AES-128 (crypt filter ``/AESV2``: CBC, the first 16 bytes
the IV) only when the ``cryptography`` package is installed. Revision 5/6 (AES-256) is not handled:
such files are not checked.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

_PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")
"""The 32-byte padding string of ISO 32000-1, 7.6.3.3 Algorithm 2, step a."""

Decrypt = Callable[[int, int, bytes], bytes]
"""``decrypt(object_number, generation, data) -> plain data``."""


def rc4(key: bytes, data: bytes) -> bytes:
    """RC4 of ``data`` with ``key`` (encryption and decryption are the same operation)."""
    s = list(range(256))
    j = 0
    for i in range(256):
        j = (j + s[i] + key[i % len(key)]) & 0xFF
        s[i], s[j] = s[j], s[i]
    out = bytearray(len(data))
    i = j = 0
    for n, byte in enumerate(data):
        i = (i + 1) & 0xFF
        j = (j + s[i]) & 0xFF
        s[i], s[j] = s[j], s[i]
        out[n] = byte ^ s[(s[i] + s[j]) & 0xFF]
    return bytes(out)


def pdf_string(dictionary: bytes, key: bytes) -> bytes | None:
    """The literal or hex string value of ``/key`` in ``dictionary`` (escapes resolved), else None."""
    m = re.search(rb"/" + key + rb"\s*(<[0-9A-Fa-f\s]*>|\()", dictionary)
    if m is None:
        return None
    if m.group(1).startswith(b"<"):
        return bytes.fromhex(re.sub(rb"\s", b"", m.group(1)[1:-1]).decode())
    out, depth, i = bytearray(), 1, m.end()
    escapes = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("b"): 8, ord("f"): 12}
    while i < len(dictionary) and depth:
        ch = dictionary[i]
        if ch == 0x5C:  # backslash
            nxt = dictionary[i + 1]
            octal = re.match(rb"[0-7]{1,3}", dictionary[i + 1:i + 4])
            if octal:
                out.append(int(octal.group(), 8) & 0xFF)
                i += 1 + len(octal.group())
                continue
            if nxt in (0x0A, 0x0D):  # a line continuation
                i += 2 + (nxt == 0x0D and dictionary[i + 2:i + 3] == b"\n")
                continue
            out.append(escapes.get(nxt, nxt))
            i += 2
            continue
        depth += ch == 0x28
        depth -= ch == 0x29
        if depth:
            out.append(ch)
        i += 1
    return bytes(out)


def _int(dictionary: bytes, key: bytes, default: int) -> int:
    """The integer value of ``/key`` in ``dictionary`` (``default`` when absent)."""
    m = re.search(rb"/" + key + rb"\s+(-?\d+)", dictionary)
    return int(m.group(1)) if m else default


def _file_key(encrypt: bytes, owner: bytes, first_id: bytes, revision: int, length: int) -> bytes:
    """The file key from the empty user password (ISO 32000-1, 7.6.3.3 Algorithm 2), ``length`` bytes."""
    p = _int(encrypt, b"P", 0) & 0xFFFFFFFF
    seed = _PAD + owner[:32] + p.to_bytes(4, "little") + first_id
    if revision >= 4 and re.search(rb"/EncryptMetadata\s+false", encrypt):
        seed += b"\xff\xff\xff\xff"
    key = hashlib.md5(seed, usedforsecurity=False).digest()
    if revision >= 3:
        for _ in range(50):
            key = hashlib.md5(key[:length], usedforsecurity=False).digest()
    return key[:length]


def _object_key(key: bytes, number: int, generation: int, salt: bytes = b"") -> bytes:
    """The key of one object's strings and streams (ISO 32000-1, 7.6.2 Algorithm 1)."""
    digest = hashlib.md5(key + number.to_bytes(3, "little") + generation.to_bytes(2, "little") + salt,
                         usedforsecurity=False).digest()
    return digest[:min(len(key) + 5, 16)]


def _aes_decrypter(key: bytes) -> Decrypt | None:
    """AES-128-CBC stream decryption (crypt filter ``/AESV2``), None without ``cryptography``."""
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    except ImportError:  # pragma: no cover - optional: AES files then go unchecked
        return None

    def decrypt(number: int, generation: int, data: bytes) -> bytes:
        """AES-128-CBC with the object key; the IV is the first 16 bytes, PKCS#5 padding dropped."""
        if len(data) < 32 or len(data) % 16:
            return b""
        cipher = Cipher(algorithms.AES(_object_key(key, number, generation, b"sAlT")), modes.CBC(data[:16]))
        plain = cipher.decryptor().update(data[16:])
        return plain[:-plain[-1]] if 1 <= plain[-1] <= 16 else plain
    return decrypt


def stream_decrypter(encrypt: bytes, first_id: bytes) -> Decrypt | None:
    """A stream decrypter for the ``/Encrypt`` dictionary ``encrypt`` and the first ``/ID`` string,
    or None when the handler, revision or cipher is not one handled here (module docstring)."""
    revision, version = _int(encrypt, b"R", 0), _int(encrypt, b"V", 0)
    owner = pdf_string(encrypt, b"O")
    if not re.search(rb"/Filter\s*/Standard\b", encrypt) or owner is None or not 2 <= revision <= 4:
        return None
    aes = version == 4 and b"/AESV2" in encrypt
    if version == 4 and not aes and b"/V2" not in encrypt:
        return None
    length = 16 if version == 4 else 5 if revision == 2 else _int(encrypt, b"Length", 40) // 8
    key = _file_key(encrypt, owner, first_id, revision, length)
    if aes:
        return _aes_decrypter(key)

    def decrypt_rc4(number: int, generation: int, data: bytes) -> bytes:
        """RC4 with the object key (Algorithm 1)."""
        return rc4(_object_key(key, number, generation), data)
    return decrypt_rc4
