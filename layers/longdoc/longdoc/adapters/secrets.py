"""API keys from AWS Secrets Manager (in AWS) or from the environment (locally).

Secrets are read through Powertools' Parameters utility, which caches each value in
memory for :data:`SECRET_MAX_AGE_SECONDS` so a warm Lambda does not call Secrets Manager
on every invocation. Key values are never logged and never appear in error messages.

Rotation: an SDK client built from a key keeps that key for the life of the execution
environment. Adapters therefore take a :class:`SecretKey` (a key *source*) instead of a key:
they ask it for the key before each call (cheap: the cached value) and rebuild their client
when the key differs, i.e. when a new secret version with a new value was read; after an
authentication error they ask with ``refresh=True``, which bypasses the cache
(Powertools ``force_fetch``), and retry once. A rotated key thus reaches warm functions within
:data:`SECRET_MAX_AGE_SECONDS`, and at once after a 401.
"""

from __future__ import annotations

import json
import os

from longdoc.core.errors import ConfigError

#: Seconds a secret stays cached in the process (Powertools ``max_age``).
SECRET_MAX_AGE_SECONDS = 300
#: JSON field holding the key when a secret is stored as ``{"api_key": "..."}``.
SECRET_JSON_FIELD = "api_key"


def api_key(env_var: str, secret_name: str | None, *, refresh: bool = False) -> str:
    """Return an API key, from Secrets Manager when ``secret_name`` is set, else ``os.environ``.

    Args:
        env_var: environment variable holding the key locally (e.g. ``"ANTHROPIC_API_KEY"``);
            also named in errors so people know which key is meant.
        secret_name: Secrets Manager secret name or ARN, or ``None`` to use ``env_var``. The
            secret string is either the raw key or JSON ``{"api_key": "..."}``; surrounding
            whitespace is stripped. Values are cached for :data:`SECRET_MAX_AGE_SECONDS`.
        refresh: read Secrets Manager now, bypassing (and refreshing) the cached value.

    Returns:
        The key, stripped of surrounding whitespace (never empty).

    Raises:
        ConfigError: the secret cannot be read, is JSON without a non-empty ``api_key``
            string, or is empty; or (without a secret name) ``env_var`` is unset or empty.
            The message names the secret and/or the variable, never the value.
    """
    if secret_name:
        key = _key_from_secret(secret_name, env_var, refresh=refresh)
    else:
        key = os.environ.get(env_var, "").strip()
        if not key:
            raise ConfigError(f"environment variable {env_var} is not set or empty")
    return key


class SecretKey:
    """A key source for adapters: ``SecretKey(env_var, secret_name)(refresh=False) -> key``.

    Each call returns :func:`api_key` for the same arguments (so the cached value, at most
    :data:`SECRET_MAX_AGE_SECONDS` old); ``refresh=True`` bypasses the cache. Holds names only,
    never the key, so its ``repr`` is safe to log.

    Raises:
        ConfigError: as :func:`api_key`.
    """

    def __init__(self, env_var: str, secret_name: str | None) -> None:
        self.env_var = env_var
        self.secret_name = secret_name

    def __call__(self, *, refresh: bool = False) -> str:
        return api_key(self.env_var, self.secret_name, refresh=refresh)

    def __repr__(self) -> str:
        return f"SecretKey(env_var={self.env_var!r}, secret_name={self.secret_name!r})"


def _key_from_secret(secret_name: str, env_var: str, *, refresh: bool = False) -> str:
    """Read and unwrap one secret; see :func:`api_key` for the accepted shapes."""
    # Imported here so local mode never loads boto3 for this.
    from aws_lambda_powertools.utilities import parameters
    from botocore.exceptions import BotoCoreError

    where = f"secret {secret_name!r} (for {env_var})"
    try:
        raw = parameters.get_secret(secret_name, max_age=SECRET_MAX_AGE_SECONDS, force_fetch=refresh)
    except (parameters.GetParameterError, BotoCoreError) as exc:  # BotoCoreError: e.g. no region
        raise ConfigError(f"cannot read {where}: {exc}") from exc
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"{where} is binary, not UTF-8 text") from None
    text = (raw or "").strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise ConfigError(f"{where} looks like JSON but does not parse") from None
        value = data.get(SECRET_JSON_FIELD) if isinstance(data, dict) else None
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where} is JSON without a non-empty {SECRET_JSON_FIELD!r} string")
        text = value.strip()
    if not text:
        raise ConfigError(f"{where} is empty")
    return text
