"""Fixtures of the Claude contract suite: the functional tests' moto stack and ingested contract, reused.

Only non-autouse fixtures, re-exported from :mod:`tests.functional.conftest` (pytest finds a
fixture by its name in a conftest of the test's folder or above).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.functional.conftest import aws_stack, fake_aws_env, ingested_contract, minilm  # noqa: F401


@pytest.fixture
def fresh_aws_session(fake_aws_env: None) -> Iterator[None]:  # noqa: F811
    """The fake AWS environment, with the ``anthropic`` SDK's cached botocore sessions dropped.

    The SDK caches one session per (profile, region, keys) argument set, keys read from the
    environment when not given; a session made under moto (whose own fake keys differ) would
    otherwise sign later requests with keys the Bedrock fake does not know.
    """
    from anthropic.lib.aws import _auth

    _auth._get_session.cache_clear()
    yield
    _auth._get_session.cache_clear()
