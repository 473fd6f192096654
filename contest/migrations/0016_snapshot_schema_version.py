"""Results snapshots carry their shape's version (``data["version"]``).

Snapshots stored before it are brought to the current shape (``contest.services.results.SNAPSHOT_VERSION``)
from their own numbers: leaderboards, standing and correlation where missing
(``contest.services.results.upgraded_snapshot_data``), so the pages read one shape. Their ``sha256``
stays the digest of what their job computed.
"""
from django.db import migrations

from contest.services.results import SNAPSHOT_VERSION, upgraded_snapshot_data


def upgrade_snapshots(apps, schema_editor):
    ResultsSnapshot = apps.get_model("contest", "ResultsSnapshot")
    Round = apps.get_model("contest", "Round")
    for snap in ResultsSnapshot.objects.only("pk", "contest_id", "data").iterator():
        data = snap.data or {}
        if data.get("version") == SNAPSHOT_VERSION:
            continue
        names = dict(Round.objects.filter(contest_id=snap.contest_id).values_list("number", "name"))
        ResultsSnapshot.objects.filter(pk=snap.pk).update(data=upgraded_snapshot_data(data, names))


class Migration(migrations.Migration):

    dependencies = [
        ("contest", "0015_snapshot_correlation"),
    ]

    operations = [
        migrations.RunPython(upgrade_snapshots, migrations.RunPython.noop),
    ]
