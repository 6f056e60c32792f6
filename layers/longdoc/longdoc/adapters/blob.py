"""BlobStore adapters: a local folder (:class:`LocalBlobStore`) and S3 (:class:`S3BlobStore`).

Both implement :class:`longdoc.core.ports.BlobStore`: bytes by ``/``-separated key, atomic
overwrite, :class:`longdoc.core.errors.NotFound` for a missing key, idempotent delete, and
the object's user metadata (S3's ``x-amz-meta-*``; a folder has none, so locally a
``<file>.metadata.json`` sidecar is the way to attach document metadata).
"""

from __future__ import annotations

import errno
import os
import tempfile
from email.errors import HeaderParseError
from email.header import decode_header, make_header
from pathlib import Path, PurePosixPath
from typing import Any

from longdoc.adapters.dynamo_client import LazyBotoClient
from longdoc.core.errors import NotFound
from longdoc.core.paths import too_long_is_absent

# Error codes S3 uses for a missing object: ``NoSuchKey`` from GetObject, and a bare
# ``404`` (HEAD responses carry no body) from HeadObject.
# Source: https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html
_S3_MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


class LocalBlobStore:
    """Blobs as files under ``root``; key ``"a/b.pdf"`` is the file ``root / "a" / "b.pdf"``.

    Keys must be relative and made of non-empty segments other than ``.`` and ``..``
    (a folder cannot represent the rest faithfully, and ``..`` would escape ``root``);
    anything else raises :class:`ValueError`. Writes go to a temporary file in the
    target folder followed by :func:`os.replace`, which POSIX and Windows perform
    atomically within one file system, so readers see the old or the new bytes, never
    a mix. Safe to share between threads. A key with a segment longer than the file
    system allows (255 bytes a name on ext4, APFS and NTFS; S3 allows 1,024 bytes a key)
    cannot be stored here: reading, testing or deleting it finds nothing, writing it
    raises ``OSError`` naming the key.
    """

    def __init__(self, root: Path) -> None:
        """Use ``root`` (created on first write if missing) as the store's folder."""
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        """Map ``key`` to its file path. Raises :class:`ValueError` for an unsafe key."""
        if not key or key.startswith(("/", "\\")) or PurePosixPath(key).is_absolute():
            raise ValueError(f"blob key must be a non-empty relative path: {key!r}")
        parts = key.split("/")
        for part in parts:
            if part in ("", ".", "..") or "\\" in part or "\x00" in part:
                raise ValueError(f"blob key has an unsafe segment {part!r}: {key!r}")
        if Path(parts[0]).drive:  # "C:" on Windows
            raise ValueError(f"blob key must be a relative path: {key!r}")
        return self.root.joinpath(*parts)

    def get(self, key: str) -> bytes:
        """Return the bytes stored under ``key``.

        Raises :class:`longdoc.core.errors.NotFound` (naming the key) if absent, and
        :class:`ValueError` for an unsafe key.
        """
        path = self._path(key)
        try:
            return path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise NotFound(f"blob not found: {key}") from None
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                raise NotFound(f"blob not found: {key}") from None
            raise

    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` atomically (temp file in the same folder, then replace).

        Parent folders are created as needed. Raises :class:`ValueError` for an unsafe
        key and :class:`OSError` if the file system refuses; on failure the previous
        bytes (if any) stay in place and no temporary file is left behind.
        """
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=".put-", suffix=".tmp")
        except OSError as exc:
            raise _named(exc, key) from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp_name, path)
        except OSError as exc:
            Path(tmp_name).unlink(missing_ok=True)
            raise _named(exc, key) from None
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise

    def exists(self, key: str) -> bool:
        """Return whether a blob is stored under ``key``. Raises :class:`ValueError` for an unsafe key."""
        return too_long_is_absent(self._path(key).is_file, False)

    def delete(self, key: str) -> None:
        """Delete ``key``; a missing key is not an error. Raises :class:`ValueError` for an unsafe key."""
        too_long_is_absent(lambda: self._path(key).unlink(missing_ok=True), None)

    def metadata(self, key: str) -> dict[str, str]:
        """Return ``{}``: a file has no per-object user metadata (use a ``<file>.metadata.json`` sidecar).

        Raises :class:`longdoc.core.errors.NotFound` (naming the key) if no blob is stored under
        ``key``, and :class:`ValueError` for an unsafe key.
        """
        if not self.exists(key):
            raise NotFound(f"blob not found: {key}")
        return {}


def _named(exc: OSError, key: str) -> OSError:
    """``exc``, or for a name too long for the file system (ENAMETOOLONG) an ``OSError`` naming ``key``."""
    if exc.errno == errno.ENAMETOOLONG:
        return OSError(exc.errno, f"cannot store blob {key!r}: a name in it is too long for this file system")
    return exc


class S3BlobStore(LazyBotoClient):
    """Blobs as objects in one S3 bucket; the key is the object key, unchanged.

    ``client`` is a boto3 S3 client; when omitted one is created on first use (once per
    instance, using the default credential chain and region). Encryption at rest is the
    bucket's default encryption, so ``put`` sends a plain PutObject. A single PutObject
    is atomic: S3 readers see the whole old or whole new object
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/Welcome.html#ConsistencyModel).
    """

    service = "s3"

    def __init__(self, bucket: str, client: Any | None = None) -> None:
        """Store blobs in ``bucket``, through ``client`` if given."""
        super().__init__(client)
        self.bucket = bucket

    def get(self, key: str) -> bytes:
        """Return the object's bytes.

        Raises :class:`longdoc.core.errors.NotFound` (naming the key) for NoSuchKey/404 and
        lets any other ``botocore`` error propagate.
        """
        response = self._object(self.client.get_object, key)
        body: bytes = response["Body"].read()
        return body

    def _object(self, operation: Any, key: str) -> dict[str, Any]:
        """Call ``operation`` (the client's ``get_object`` or ``head_object``) for ``key``.

        Raises :class:`longdoc.core.errors.NotFound` naming the key for NoSuchKey/404; any other
        ``botocore`` error propagates.
        """
        from botocore.exceptions import ClientError

        try:
            response: dict[str, Any] = operation(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _S3_MISSING_CODES:
                raise NotFound(f"blob not found: s3://{self.bucket}/{key}") from None
            raise
        return response

    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` with one PutObject (atomic; up to 5 GB per S3 limits)."""
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data)

    def exists(self, key: str) -> bool:
        """Return whether the object exists (HeadObject; 404 means no, other errors propagate)."""
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _S3_MISSING_CODES:
                return False
            raise
        return True

    def delete(self, key: str) -> None:
        """Delete the object; S3 DeleteObject succeeds for a missing key too."""
        self.client.delete_object(Bucket=self.bucket, Key=key)

    def metadata(self, key: str) -> dict[str, str]:
        """Return the object's user metadata from HeadObject (``Metadata``), ``{}`` when it has none.

        S3 stores user metadata names lower-cased and returns them without the
        ``x-amz-meta-`` prefix; values with non-ASCII characters come back RFC 2047 encoded
        (``=?UTF-8?B?...?=``) and are decoded here
        (https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html).
        HeadObject needs only ``s3:GetObject`` permission. Raises
        :class:`longdoc.core.errors.NotFound` (naming the key) for a missing object; other
        ``botocore`` errors propagate.
        """
        response = self._object(self.client.head_object, key)
        return {str(name).lower(): _decode_rfc2047(str(value))
                for name, value in (response.get("Metadata") or {}).items()}


def _decode_rfc2047(value: str) -> str:
    """Decode RFC 2047 encoded words (``=?UTF-8?B?...?=``) in an S3 metadata value; other text is unchanged."""
    if "=?" not in value:
        return value
    try:
        return str(make_header(decode_header(value)))
    except (HeaderParseError, ValueError, LookupError, UnicodeDecodeError):
        return value  # not a well-formed encoded word: keep the value as S3 returned it
