"""Where Claude on Amazon Bedrock is called from and with which credentials, resolved once (issue 28).

:func:`resolve_bedrock_access` runs at composition (:func:`longdoc.wiring.model`), before any local
state-machine run: the local engine replaces the AWS keys with moto's fakes, sets ``us-east-1`` and
drops ``AWS_PROFILE`` for its stand-ins (:func:`longdoc.local.engine._aws_sandbox`), and a model
client that read the environment at request time would sign with those fakes. The resolved
:class:`BedrockAccess` is passed to the SDK client explicitly (``aws_region``, ``aws_access_key``,
``aws_secret_key``, ``aws_session_token``; or ``api_key`` for a Bedrock API key), so the sandbox never
reaches it.

Region, first that is set: ``LONGDOC_BEDROCK_REGION``; ``AWS_REGION`` (what Lambda sets, and what the
``anthropic`` SDK reads first); boto3's session region (``AWS_DEFAULT_REGION``, then the ``region`` of
the profile, ``AWS_PROFILE`` or ``default``). None is a :class:`~longdoc.core.errors.ConfigError`.

Credentials: a Bedrock API key in ``AWS_BEARER_TOKEN_BEDROCK`` when set (the variable the SDK reads,
https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys-use.html), else boto3's credential chain
(environment keys, the profile's keys / SSO / assume-role, container or instance role;
https://boto3.amazonaws.com/v1/documentation/api/latest/guide/credentials.html). Temporary
credentials are re-read through the same botocore object (:meth:`BedrockAccess.keys`), which refreshes
them before they expire; a refresh needs AWS's STS/SSO, so one due inside a local run (moto answers
every botocore call there) fails: run again after ``aws sso login``.

:func:`check_region_matches` refuses a model id whose geographic inference-profile prefix cannot be
called from the region (``eu.anthropic...`` from ``us-east-1``), and an ARN of another region.
The log line (``Bedrock: region ... (from ...), credentials ...``) names the sources, never a key.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any

from longdoc.core.errors import ConfigError

log = logging.getLogger(__name__)

MODEL_SETTING = "LONGDOC_CLAUDE_MODEL"
REGION_SETTING = "LONGDOC_BEDROCK_REGION"
BEARER_VARIABLE = "AWS_BEARER_TOKEN_BEDROCK"

#: Geographic prefix of a system-defined (cross-Region) inference profile id -> the source Regions it
#: may be called from, as a Region-name prefix ("" = any commercial Region). "Supported Regions and
#: models for inference profiles": https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-support.html
#: (us: US Regions, eu: European, apac: Asia Pacific, us-gov: GovCloud, global: all commercial Regions).
PROFILE_PREFIXES: dict[str, tuple[str, ...]] = {
    "us": ("us-",), "us-gov": ("us-gov-",), "eu": ("eu-",), "apac": ("ap-",), "global": ("",),
}
_ARN_REGION = re.compile(r"^arn:aws[a-z-]*:bedrock:([a-z0-9-]+):")


@dataclass(frozen=True)
class AwsKeys:
    """One frozen set of AWS credentials (strings); ``repr`` shows none of them."""

    access_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class BedrockAccess:
    """Region and credentials of the Bedrock client, resolved once (:func:`resolve_bedrock_access`).

    Attributes:
        region: the AWS Region the client calls (``eu-west-1``).
        region_source: where it came from (``LONGDOC_BEDROCK_REGION``, ``AWS_REGION``,
            ``AWS_DEFAULT_REGION``, ``profile 'dev'``).
        credential_source: botocore's credential method (``env``, ``shared-credentials-file``,
            ``sso``, ``assume-role``, ``container-role``, ...) with the profile, or the bearer variable.
        bearer_token: a Bedrock API key (``AWS_BEARER_TOKEN_BEDROCK``), else None; not in ``repr``.
        credentials: botocore's credentials object (refreshes temporary ones), else None.
    """

    region: str
    region_source: str
    credential_source: str
    bearer_token: str | None = field(default=None, repr=False)
    credentials: Any = field(default=None, repr=False, compare=False)

    def keys(self) -> AwsKeys | None:
        """The current keys (refreshed by botocore when temporary ones near expiry); None with a bearer token.

        Raises :class:`ConfigError` when they cannot be read (an SSO session that expired).
        """
        if self.credentials is None:
            return None
        try:
            frozen = self.credentials.get_frozen_credentials()
        except Exception as exc:  # botocore's TokenRetrievalError, NoCredentialsError, ...
            raise ConfigError(f"AWS credentials for Bedrock ({self.credential_source}) cannot be read: {exc}") from exc
        return AwsKeys(frozen.access_key, frozen.secret_key, frozen.token)

    def client_kwargs(self) -> dict[str, Any]:
        """The SDK client's auth arguments, read now: ``aws_region`` plus the current keys
        (``aws_access_key``, ``aws_secret_key``, ``aws_session_token``), or ``api_key`` for a bearer token."""
        if self.bearer_token is not None:
            return {"aws_region": self.region, "api_key": self.bearer_token}
        keys = self.keys()
        assert keys is not None  # credentials is set whenever bearer_token is not
        return {"aws_region": self.region, "aws_access_key": keys.access_key, "aws_secret_key": keys.secret_key,
                "aws_session_token": keys.session_token}

    def describe(self) -> str:
        """``region eu-west-1 (from AWS_DEFAULT_REGION), credentials sso (profile 'dev')``: no key."""
        return f"region {self.region} (from {self.region_source}), credentials {self.credential_source}"


def check_region_matches(model_id: str, region: str) -> None:
    """Refuse a model id that cannot be called from ``region``.

    A system inference profile id starts with its geography (``us.``, ``eu.``, ``apac.``, ``us-gov.``,
    ``global.``; :data:`PROFILE_PREFIXES`) and is callable only from a Region of it; an ARN
    (``arn:aws:bedrock:<region>:<account>:application-inference-profile/<id>``, ``...:inference-profile/...``,
    ``...::foundation-model/...``) names its Region. Foundation-model ids (``anthropic.claude-...``)
    and unknown prefixes are not checked. Raises :class:`ConfigError` naming
    :data:`MODEL_SETTING` and :data:`REGION_SETTING`.
    """
    arn = _ARN_REGION.match(model_id)
    if arn:
        if arn.group(1) and arn.group(1) != region:
            raise ConfigError(f"{MODEL_SETTING}={model_id} is an ARN in {arn.group(1)} but the Bedrock region is "
                              f"{region}: set {REGION_SETTING}={arn.group(1)} or use an ARN of {region}")
        return
    prefix = model_id.split(".", 1)[0] if "." in model_id else ""
    allowed = PROFILE_PREFIXES.get(prefix)
    if allowed is None or any(region.startswith(a) for a in allowed if a):
        return
    if allowed == ("",):
        if region.startswith(("us-gov-", "cn-")):
            raise ConfigError(f"{MODEL_SETTING}={model_id} is a global inference profile, not callable from "
                              f"{region}: use a profile of that partition or set {REGION_SETTING}")
        return
    raise ConfigError(f"{MODEL_SETTING}={model_id} is a '{prefix}.' inference profile, callable only from "
                      f"{'/'.join(a + '*' for a in allowed)} Regions, but the Bedrock region is {region}: set "
                      f"{REGION_SETTING} (or AWS_REGION / the profile's region) to such a Region, or use the "
                      f"'{_suggested_prefix(region)}.' profile of the model")


def _suggested_prefix(region: str) -> str:
    for prefix, allowed in PROFILE_PREFIXES.items():
        if prefix != "us" and any(a and region.startswith(a) for a in allowed):
            return prefix
    return "us" if region.startswith("us-") else "global"


def resolve_bedrock_access(model_id: str, region: str | None = None) -> BedrockAccess:
    """Resolve the Bedrock client's region and credentials once, check ``model_id`` against the region, log both.

    ``region``: the explicit setting (:data:`REGION_SETTING`), else the environment and boto3's session
    (module docstring). Returns the :class:`BedrockAccess` to build the client with. Raises
    :class:`ConfigError` with no region, no credentials, a profile that does not exist or cannot give
    credentials, or a model id / region mismatch (:func:`check_region_matches`).
    """
    import boto3
    import botocore.exceptions

    profile = os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE")
    try:
        session = boto3.Session(profile_name=profile) if profile else boto3.Session()
    except botocore.exceptions.ProfileNotFound as exc:
        raise ConfigError(f"AWS profile for Bedrock not found: {exc} (AWS_PROFILE={profile})") from exc
    if region:
        source = REGION_SETTING
    elif os.environ.get("AWS_REGION"):
        region, source = os.environ["AWS_REGION"], "AWS_REGION"
    elif os.environ.get("AWS_DEFAULT_REGION"):
        region, source = os.environ["AWS_DEFAULT_REGION"], "AWS_DEFAULT_REGION"
    else:
        region, source = session.region_name, f"profile '{session.profile_name}'"
    if not region:
        raise ConfigError(f"no AWS region for Bedrock: set {REGION_SETTING}, AWS_REGION or AWS_DEFAULT_REGION, or "
                          "a region for the AWS profile (aws configure set region ...)")
    check_region_matches(model_id, region)
    where = f" (profile '{profile}')" if profile else ""
    if os.environ.get(BEARER_VARIABLE):
        access = BedrockAccess(region, source, f"Bedrock API key ({BEARER_VARIABLE})",
                               bearer_token=os.environ[BEARER_VARIABLE])
    else:
        try:
            credentials = session.get_credentials()
        except botocore.exceptions.BotoCoreError as exc:
            raise ConfigError(f"AWS credentials for Bedrock cannot be read{where}: {exc}") from exc
        if credentials is None:
            raise ConfigError("no AWS credentials for Bedrock: set AWS_PROFILE (after aws sso login or aws "
                              "configure) or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY")
        access = BedrockAccess(region, source, f"{getattr(credentials, 'method', 'unknown')}{where}",
                               credentials=credentials)
        access.keys()  # read them now, outside any local run: an expired SSO session fails here, clearly
    log.info("Bedrock: %s; model %s", access.describe(), model_id)
    return access
