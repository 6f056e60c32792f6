"""The caller of an API request (issue 26): the IAM identity API Gateway put in the request context.

Shared by the route modules: run and job ids are scoped by it and reads check it
(:mod:`longdoc.core.tenancy`). Locally (no IAM identity) every request is :data:`~longdoc.core.tenancy.LOCAL_CALLER`.
"""

from __future__ import annotations

from typing import Any

from longdoc.core.tenancy import caller_of


def request_caller(event: Any) -> str:
    """The caller of ``event`` (a Powertools ``APIGatewayProxyEvent``): user ARN, caller id, account, or ``local``."""
    identity = event.request_context.identity
    return caller_of(identity.user_arn, identity.caller, identity.account_id)
