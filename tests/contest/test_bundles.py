"""Bundles (contest.services.bundles): one builder for every multi-file download, and the big ones built once.

Every zip has a manifest and checksums a team can verify, each path once. The
attack material is built at phase close and the export on demand, by jobs: a
download streams the zip a job built, never one built in the request; a bundle
whose members changed is built again and the outdated zip is never served. The
zips are stored in the database like every file, so a worker on another machine
(nothing shared but the database and the broker) builds what the web serves.
"""
from __future__ import annotations

import hashlib
import io
import json
import subprocess
import zipfile
from pathlib import Path

import pytest
from django.db import connection

from contest.models import Bundle, Dataset, Job, Phase, PublicSet, StoredFile, Team
from contest.services import bundles, generation, judge, storage, uploads
from contest.services.setup import create_contest
from tests.contest.conftest import (
    anonymize_csv,
    built_on_generated,
    contest_spec,
    move_phase,
    upload_all_and_close,
    user,
)
from tests.worker import wait_for_jobs, worker_env  # noqa: F401  (fixture)

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


def test_a_bundles_files_unpack_readable_by_everyone_and_dated_when_it_was_built():
    """Every member, the data files as well as MANIFEST.json and SHA256SUMS, has mode 0644 (unzip sets it;
    0600 before) and the build time as its date (1980-01-01 before)."""
    from datetime import UTC, datetime
    a = storage.store_bytes(b"reg_id\n5\n", "anotraces_team001_data01_IDP.csv")
    dest = io.BytesIO()
    before = datetime.now(UTC).replace(microsecond=0, second=0)
    bundles.write_bundle(dest, [bundles.Entry(a.pk, "round1")], extra={"results.json": "{}"})
    infos = zipfile.ZipFile(dest).infolist()
    assert len(infos) == 4
    for info in infos:
        assert (info.external_attr >> 16) & 0o777 == 0o644, (info.filename, oct(info.external_attr >> 16))
        dated = datetime(*info.date_time, tzinfo=UTC)
        assert before <= dated <= datetime.now(UTC), (info.filename, info.date_time)
        assert info.compress_type == zipfile.ZIP_DEFLATED


def test_a_corrupt_stored_file_stops_the_bundle(tmp_path):
    a = storage.store_bytes(b"reg_id\n5\n", "x.csv")
    with connection.cursor() as cursor:  # stored rows are append-only; only the database itself can corrupt one
        cursor.execute(f"UPDATE {type(a)._meta.db_table} SET sha256 = %s WHERE id = %s", ["0" * 64, a.pk])  # noqa: S608 - the table name is the model's own; values are parameters
    with pytest.raises(OSError, match="fails its SHA-256 check"):
        bundles.write_bundle(tmp_path / "b.zip", [bundles.Entry(a.pk)])


@pytest.fixture
def closed(request):
    return built_on_generated(request, "closed", lambda contest, capture: upload_all_and_close(
        contest, {1: ("A1-none", {}), 2: ("A3-kRR", {"eps": 8.0}), 3: ("A1-none", {})}, capture))


def _zip(bundle: Bundle) -> bytes:
    return storage.read_bytes(bundle.file)


def test_the_attack_material_is_built_once_at_phase_close(closed):
    rnd = closed.rounds.get()
    built = Bundle.objects.get(contest=closed, kind=Bundle.ATTACK_MATERIAL)
    assert Job.objects.filter(contest=closed, kind="build_bundle", status=Job.SUCCEEDED).count() == 1
    plan = bundles.attack_material_plan(rnd)
    assert built.inputs == plan.inputs and built.round == rnd and bundles.current(plan) == built
    body = _zip(built)  # stored in the database, its SHA-256 and size the zip's own
    assert hashlib.sha256(body).hexdigest() == built.sha256 == built.file.sha256 and len(body) == built.size
    assert built.file.name == built.file_name and built.file.content_type == "application/zip"
    # it holds what the plan says: every public set's pubtraces and reference, info files, no secrets
    with zipfile.ZipFile(io.BytesIO(body)) as zf:
        names = set(zf.namelist()) - {"MANIFEST.json", "SHA256SUMS"}
    assert names == {m.path for m in plan.members} and built.files == len(plan.members)
    assert not any(n.startswith(("ptable", "orgtraces", "anotraces")) for n in names)
    # asking again queues nothing: it is built
    assert bundles.request_build(plan) is None


def test_one_job_per_bundle_whatever_the_number_of_requests(closed):
    plan = bundles.export_plan(closed)
    first = bundles.request_build(plan)  # not run: this test does not execute on-commit callbacks
    assert first is not None and first.args["inputs"] == plan.inputs
    assert bundles.request_build(plan) == first == bundles.build_job(plan)
    assert Job.objects.filter(contest=closed, kind="build_bundle", args__bundle=Bundle.EXPORT).count() == 1


def test_an_outdated_export_is_never_served_and_is_forgotten(closed, django_capture_on_commit_callbacks):
    old = bundles.build(bundles.export_plan(closed))
    assert bundles.current(bundles.export_plan(closed)) == old
    target = PublicSet.objects.get(dataset__round__contest=closed, dataset__number=1, dataset__challenge=1)
    etable = ("user_id\n" + "".join(f"{u}\n" for u in range(1, closed.users_per_set + 1))).encode()
    with django_capture_on_commit_callbacks(execute=True):  # a new attack upload changes the export's members
        uploads.submit_attack(user=user("beta1"), attacker=Team.objects.get(contest=closed, number=2),
                              target=target, kind="etable", content=etable, name="late.csv")
    plan = bundles.export_plan(closed)
    assert plan.inputs != old.inputs and bundles.current(plan) is None
    new = bundles.build(plan)
    assert new.file_name != old.file_name and hashlib.sha256(_zip(new)).hexdigest() == new.sha256
    assert not Bundle.objects.filter(pk=old.pk).exists()
    # the old zip stays stored (append-only): a download streaming it when it was replaced reads it to the end
    assert hashlib.sha256(_zip(old)).hexdigest() == old.sha256
    with zipfile.ZipFile(io.BytesIO(_zip(new))) as zf:
        assert any(n.startswith("round1/attacks/team002_") and n.endswith("/late.csv") for n in zf.namelist())


def test_a_bundle_recorded_without_its_stored_zip_is_built_again(closed, django_capture_on_commit_callbacks):
    """A row from before the zips were stored in the database (its zip was in a folder) counts as not built."""
    rnd = closed.rounds.get()
    built = Bundle.objects.get(contest=closed, kind=Bundle.ATTACK_MATERIAL)
    Bundle.objects.filter(pk=built.pk).update(file=None)
    plan = bundles.attack_material_plan(rnd)
    assert bundles.current(plan) is None
    with django_capture_on_commit_callbacks(execute=True):
        job = bundles.request_build(plan)
    job.refresh_from_db()
    assert job.status == Job.SUCCEEDED and job.progress == 1.0
    again = bundles.current(plan)
    assert again.pk == built.pk and again.file_id is not None and again.inputs == built.inputs
    assert hashlib.sha256(_zip(again)).hexdigest() == again.sha256


def test_a_failed_build_stores_nothing(closed, monkeypatch, tmp_path):
    plan = bundles.export_plan(closed)
    files = StoredFile.objects.count()

    def broken(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(bundles.storage, "iter_bytes", broken)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # where the zip is packed before it is stored
    with pytest.raises(OSError, match="disk full"):
        bundles.build(plan)
    assert bundles.current(plan) is None and StoredFile.objects.count() == files
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_building_a_bundle_holds_a_few_chunks_of_it_in_memory(make_contest):
    """The zip is hashed and compressed as it is written, never whole in memory: 72 MB of CSV members
    (a 33 MB zip) are zipped and stored with a Python memory peak under 16 MB (tracemalloc: what Python
    allocates; 11.7 MB on this machine for a zip of 5.6 MB and of 45 MB alike: it does not grow with it)."""
    import tracemalloc

    import numpy as np
    rows = np.random.default_rng(1).integers(1, 1025, size=(3_000_000, 1))
    content = b"reg_id\n" + b"\n".join(str(v).encode() for v in rows[:, 0]) + b"\n"
    stored = [storage.store_bytes(content, f"part{i}.csv") for i in range(6)]  # 12 MB each
    p = bundles.Plan(Bundle.EXPORT, make_contest(slug="memory"), None,
                     bundles.members(bundles.Entry(s.pk) for s in stored), {"contest": "memory"})
    del content, rows
    tracemalloc.start()
    try:
        built = bundles.build(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert built.size > 30 * 2**20 and peak < 16 * 2**20, (built.size, peak)


def test_docker_compose_shares_no_folder_between_machines():
    """The web servers and the workers share only PostgreSQL and Redis: no volume but the database's
    own and the static files (collected by migrate, served by nginx) is mounted by an app service."""
    import yaml
    compose = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text())
    assert not any(key.endswith("_DIR") for key in compose["x-app-env"]), compose["x-app-env"]
    for name in ("web", "web-bulk", "worker", "worker-teams", "beat"):
        assert not compose["services"][name].get("volumes"), name


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_round_on_two_worker_machines_sharing_only_the_database_and_the_broker(worker_env, tmp_path, client):
    """Two worker "machines", each with its own var folder and temporary folder: one generates, scores and
    judges, the other (the only one on the results queue) builds the attack material; the web process
    (this one, a third machine) serves the zip with its SHA-256."""
    machines = {name: {"TRACECUP_VAR_DIR": str(tmp_path / name / "var"), "TMPDIR": str(tmp_path / name / "tmp")}
                for name in ("judge", "builder")}
    for env in machines.values():
        for folder in env.values():
            Path(folder).mkdir(parents=True)
    worker_env.start(concurrency=1, queues="interactive,generation,judge", env=machines["judge"])
    worker_env.start(concurrency=1, queues="results", env=machines["builder"])
    builder_log = worker_env.log_path
    contest = create_contest(contest_spec(slug="machines"))
    rnd = contest.rounds.get()
    generation.request_generation(rnd)
    wait_for_jobs(contest)
    for ds in Dataset.objects.filter(round=rnd, kind=Dataset.TEAM).select_related("team"):
        uploads.submit_anonymized_set(user=user(f"{ds.team.name.lower()}1"), dataset=ds,
                                      content=anonymize_csv(ds, "A1-none", seed=ds.number), name="a.csv")
    wait_for_jobs(contest)
    move_phase(rnd, Phase.ANONYMIZATION, -3, -1)
    move_phase(rnd, Phase.ATTACK, -1, 24)
    judge.request_close(rnd)
    wait_for_jobs(contest, timeout=600)

    built = Bundle.objects.get(contest=contest, kind=Bundle.ATTACK_MATERIAL)
    job = Job.objects.get(contest=contest, kind="build_bundle", status=Job.SUCCEEDED)
    assert job.celery_id and job.celery_id in builder_log.read_text()  # built on the builder machine
    client.force_login(user("alpha1"))
    r = client.get(f"/c/{contest.slug}/team/round/1/attack-material.zip")
    assert r.status_code == 200
    body = b"".join(r.streaming_content)
    assert hashlib.sha256(body).hexdigest() == built.sha256 == r["X-Checksum-SHA256"] and len(body) == built.size
    with zipfile.ZipFile(io.BytesIO(body)) as zf:
        assert zf.testzip() is None and len(json.loads(zf.read("MANIFEST.json"))["files"]) == built.files
    # nothing was left on either machine's disk: no zip, no packed temporary file
    left = [p for env in machines.values() for folder in env.values() for p in Path(folder).rglob("*") if p.is_file()]
    assert not [p for p in left if p.suffix in (".zip", ".part") or "tracecup-store" in p.name], left
