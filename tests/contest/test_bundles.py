"""One bundle builder for every multi-file download: manifest, checksums a team can verify, each path once."""
from __future__ import annotations

import io
import json
import subprocess
import zipfile

import pytest
from django.db import connection

from contest.services import bundles, storage

pytestmark = pytest.mark.django_db


def test_a_bundle_lists_each_file_once_and_sha256sum_checks_it(tmp_path):
    a = storage.store_bytes(b"user_id,time_id,reg_id\n1,1,5\n", "reftraces_team001_data01_IDP.csv")
    b = storage.store_bytes(b"reg_id\n5\n", "anotraces_team001_data01_IDP.csv")
    dest = io.BytesIO()
    doc = bundles.write_bundle(dest, [bundles.Entry(a.pk, "round1", {"what": "reference"}),
                                      bundles.Entry(b.pk, "round1", {"what": "anotraces"}),
                                      bundles.Entry(a.pk, "round1", {"what": "again"}),  # same path: skipped
                                      bundles.Entry(b.pk, "by-content", name=b.sha256)],
                               manifest={"contest": "tc"}, extra={"results.json": "{}"})
    zf = zipfile.ZipFile(dest)
    assert json.loads(zf.read("MANIFEST.json")) == doc and doc["contest"] == "tc"
    assert [f["path"] for f in doc["files"]] == [f"round1/{a.name}", f"round1/{b.name}", f"by-content/{b.sha256}"]
    assert doc["files"][0] == {"path": f"round1/{a.name}", "size": a.size, "sha256": a.sha256, "what": "reference"}
    assert zf.read(f"round1/{b.name}") == b"reg_id\n5\n" and zf.read("results.json") == b"{}"
    zf.extractall(tmp_path)
    check = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=tmp_path, capture_output=True, text=True)
    assert check.returncode == 0 and check.stdout.count(": OK") == 3


def test_a_corrupt_stored_file_stops_the_bundle(tmp_path):
    a = storage.store_bytes(b"reg_id\n5\n", "x.csv")
    with connection.cursor() as cursor:  # stored rows are append-only; only the database itself can corrupt one
        cursor.execute(f"UPDATE {type(a)._meta.db_table} SET sha256 = %s WHERE id = %s", ["0" * 64, a.pk])
    with pytest.raises(OSError, match="fails its SHA-256 check"):
        bundles.write_bundle(tmp_path / "b.zip", [bundles.Entry(a.pk)])
