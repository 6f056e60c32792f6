"""Who asked (issue 26): ids scoped by caller, and the owner check on reads.

The API is IAM-authorised: API Gateway checks the SigV4 signature and puts the caller's IAM
identity in the event's ``requestContext.identity`` (``userArn``, ``caller``, ``accountId``;
https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html,
``$context.identity``). :func:`caller_of` takes the user ARN (else the caller id, else the
account), and :data:`LOCAL_CALLER` when there is none (local mode: one fixed caller). An id
derived from an Idempotency-Key is ``sha256(caller + "\\n" + key)`` (:func:`scoped_seed`), so two
callers using the same key get two runs; a read by another caller than the stored ``owner`` is
answered as if the id did not exist (:func:`visible_to`: 404, nothing about the run leaks).
"""

from __future__ import annotations

LOCAL_CALLER = "local"
"""The caller of a request without an IAM identity (local mode, the CLI's local API)."""


def caller_of(user_arn: str | None, caller: str | None = None, account_id: str | None = None) -> str:
    """The caller a run belongs to: the IAM user/role ARN, else the caller id, else the account,
    else :data:`LOCAL_CALLER`."""
    return user_arn or caller or account_id or LOCAL_CALLER


def scoped_seed(caller: str, seed: str) -> str:
    """The text an id is hashed from: the caller, a newline (in no ARN), then ``seed`` (a key or a body)."""
    return f"{caller}\n{seed}"


def visible_to(owner: str | None, caller: str | None) -> bool:
    """Whether a record stored for ``owner`` may be read by ``caller``: always when either is None
    (records from before issue 26, the CLI and in-process readers), else only by its owner."""
    return owner is None or caller is None or owner == caller
