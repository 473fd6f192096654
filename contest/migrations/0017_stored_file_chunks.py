"""A stored file's content moves from one ``blob`` column into :class:`StoredChunk` rows.

Each file's compressed bytes are cut into pieces of ``CHUNK`` bytes, one file at a time (never two
blobs in memory), so a web or worker process never writes or reads more than one piece in a query.
The bytes are the same: each file's SHA-256 still holds. Reversible (the pieces are joined again).
"""
from django.db import migrations, models
import django.db.models.deletion

#: Bytes of compressed content per chunk; the same as ``contest.services.storage.CHUNK`` when written.
CHUNK = 1 << 20


def split_blobs(apps, schema_editor):
    StoredFile = apps.get_model("contest", "StoredFile")
    StoredChunk = apps.get_model("contest", "StoredChunk")
    for pk in StoredFile.objects.order_by("pk").values_list("pk", flat=True).iterator():
        blob = bytes(StoredFile.objects.filter(pk=pk).values_list("blob", flat=True).get())
        StoredChunk.objects.bulk_create(
            [StoredChunk(file_id=pk, seq=seq, data=blob[start:start + CHUNK])
             for seq, start in enumerate(range(0, len(blob), CHUNK))])


def join_chunks(apps, schema_editor):
    StoredFile = apps.get_model("contest", "StoredFile")
    StoredChunk = apps.get_model("contest", "StoredChunk")
    for pk in StoredFile.objects.order_by("pk").values_list("pk", flat=True).iterator():
        parts = StoredChunk.objects.filter(file_id=pk).order_by("seq").values_list("data", flat=True)
        StoredFile.objects.filter(pk=pk).update(blob=b"".join(bytes(p) for p in parts))


class Migration(migrations.Migration):

    dependencies = [
        ("contest", "0016_snapshot_schema_version"),
    ]

    operations = [
        migrations.CreateModel(
            name="StoredChunk",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("seq", models.PositiveIntegerField()),
                ("data", models.BinaryField()),
                ("file", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="chunks",
                                           to="contest.storedfile")),
            ],
        ),
        migrations.AddConstraint(
            model_name="storedchunk",
            constraint=models.UniqueConstraint(fields=("file", "seq"), name="stored_chunk_once"),
        ),
        migrations.AlterField(
            model_name="storedfile",
            name="blob",
            field=models.BinaryField(default=b"", help_text="zlib-compressed content"),
        ),
        migrations.RunPython(split_blobs, join_chunks),
        migrations.RemoveField(model_name="storedfile", name="blob"),
        migrations.AlterField(
            model_name="storedfile",
            name="compressed_size",
            field=models.BigIntegerField(help_text="bytes of the zlib-compressed content, all chunks"),
        ),
    ]
