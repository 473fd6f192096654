"""Writing one column of many rows, each its own value, in one statement (contest.services.rows)."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from contest.models import Job
from contest.services import rows

pytestmark = pytest.mark.django_db


def test_each_row_gets_its_own_value_in_one_statement_and_no_other_row_changes():
    made = [Job.objects.create(kind="score_attack", message="queued", progress=0.0) for _ in range(4)]
    messages = {made[0].pk: "scored: 0.8125", made[1].pk: "it's \"quoted\", 日本語; DROP TABLE x", made[2].pk: ""}
    with CaptureQueriesContext(connection) as queries:
        assert rows.update_each(Job, "message", messages) == 3
    assert len(queries) == 1
    assert rows.update_each(Job, "progress", {made[0].pk: 0.25, made[3].pk: 1.0}) == 2
    now = {j.pk: (j.message, j.progress) for j in Job.objects.filter(pk__in=[j.pk for j in made])}
    assert now == {made[0].pk: ("scored: 0.8125", 0.25), made[1].pk: (messages[made[1].pk], 0.0),
                   made[2].pk: ("", 0.0), made[3].pk: ("queued", 1.0)}
    assert rows.update_each(Job, "message", {}) == 0
    assert rows.update_each(Job, "message", {max(now) + 1: "no such row"}) == 0
