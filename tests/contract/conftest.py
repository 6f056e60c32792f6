"""Fixtures of the Claude contract suite: the functional tests' moto stack and ingested contract, reused.

Only non-autouse fixtures, re-exported from :mod:`tests.functional.conftest` (pytest finds a
fixture by its name in a conftest of the test's folder or above).
"""

from __future__ import annotations

from tests.functional.conftest import aws_stack, fake_aws_env, ingested_contract, minilm  # noqa: F401
