"""The test suite's own database states (tests/snapshots.py): a restored state leaves the ids to come free."""
from __future__ import annotations

import pytest
from django.db import connection, transaction

from contest.models import AuditLog
from tests import snapshots


@pytest.mark.django_db
def test_a_restore_moves_the_id_sequence_past_its_rows_when_the_sequence_was_made_anew(snapshot_base):
    """A test that migrates a table away and back makes its id sequence anew; a state restored after it
    must still leave the next insert a free id (it collided with the restored rows before)."""
    key = ("test_snapshots", "one audit entry")
    before = transaction.savepoint()
    built = snapshots.built_once(key, lambda: AuditLog.objects.create(action="built"), snapshot_base)
    transaction.savepoint_rollback(before)
    if connection.vendor == "postgresql":  # the sequence as a table made anew has it: next id = the built one
        with connection.cursor() as cursor:
            cursor.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), %s, false)",
                           [AuditLog._meta.db_table, built.pk])
    restored = snapshots.built_once(key, lambda: pytest.fail("built twice"), snapshot_base)
    assert restored.pk == built.pk
    after = AuditLog.objects.create(action="the test's own")
    assert after.pk > built.pk
