"""A bulk request's ``custom_id`` names exactly one run, and a result nobody sent is logged and counted."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from longdoc.adapters.bulk_store import SqliteBulkStore
from longdoc.bulk import steps
from longdoc.bulk.plan import CUSTOM_ID, BulkLimits, custom_id
from longdoc.bulk.ports import BatchResult


def test_run_ids_the_cleaning_would_merge_get_distinct_custom_ids() -> None:
    # Given run ids that differ only in characters the API does not allow (`.` and `/` become `_`)
    ids = ["run.a", "run_a", "run/a", "run-a"]
    # When their custom_ids are made for one round
    made = [custom_id(r, 0) for r in ids]
    # Then each is distinct, matches the API's pattern, and keeps a readable prefix and the round
    assert len(set(made)) == len(ids)
    assert all(CUSTOM_ID.match(c) and c.endswith("-r0") for c in made)
    assert made[0].startswith("run_a-") and made[1].startswith("run_a-")
    # And the same run and round always give the same id; another round another one
    assert custom_id("run.a", 0) == made[0] and custom_id("run.a", 1) != made[0]


def test_a_long_run_id_fits_the_64_character_rule_and_stays_distinct() -> None:
    # Given two long run ids sharing their first 40 characters
    a, b = "run/" + "x" * 80, "run/" + "x" * 79 + "y"
    # When their ids are made for a high round / Then both fit and differ
    ca, cb = custom_id(a, 123456789), custom_id(b, 123456789)
    assert CUSTOM_ID.match(ca) and CUSTOM_ID.match(cb) and len(ca) <= 64 and ca != cb


def test_a_result_with_an_unknown_custom_id_is_logged_and_counted(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    # Given a bulk job's store with no request sent under the result's custom_id
    deps = steps.BulkDeps(extract=None, batches=None, store=SqliteBulkStore(tmp_path / "bulk.sqlite"),  # type: ignore[arg-type]
                          limits=BulkLimits())
    result = BatchResult(custom_id="stranger-r0", type="succeeded")
    # When Harvest joins it
    with caplog.at_level(logging.WARNING, logger="longdoc.bulk.steps"):
        known = steps._harvest_one(deps, "job1", result)
    # Then it is not applied, counted as unknown, and a warning names the id and the job
    assert known is False
    [record] = [r for r in caplog.records if "unknown custom_id" in r.getMessage()]
    assert "'stranger-r0'" in record.getMessage() and "job1" in record.getMessage()
