"""Results snapshots store paper Fig. 9's R per round (``data["correlation"]``).

The plots page reads R from the snapshot instead of computing it in the request; snapshots stored
before carry the same numbers derived from their own stored ``sets`` (nothing else in them changes;
their ``sha256`` stays the digest of what their job computed).
"""
from django.db import migrations

from contest.services.results import set_correlations


def add_correlation(apps, schema_editor):
    ResultsSnapshot = apps.get_model("contest", "ResultsSnapshot")
    for snap in ResultsSnapshot.objects.only("pk", "data").iterator():
        data = snap.data or {}
        if "correlation" not in data and "sets" in data:
            data["correlation"] = set_correlations(data["sets"])
            ResultsSnapshot.objects.filter(pk=snap.pk).update(data=data)


class Migration(migrations.Migration):

    dependencies = [
        ("contest", "0014_merge_stored_set_analyses_and_training_data"),
    ]

    operations = [
        migrations.RunPython(add_correlation, migrations.RunPython.noop),
    ]
