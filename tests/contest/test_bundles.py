"""Bundles (contest.services.bundles): one builder for every multi-file download, and the big ones built once.

Every zip has a manifest and checksums a team can verify, each path once. The
attack material is built at phase close and the export on demand, by jobs: a
download streams the zip a job built, never one built in the request; a bundle
whose members changed is built again and the outdated zip is neither served nor
kept; a zip missing on this machine is rebuilt from the database.
"""
from __future__ import annotations

import hashlib
import io
import json
import subprocess
import zipfile

import pytest
from django.db import connection

from contest.models import Bundle, Job, PublicSet, Team
from contest.services import bundles, storage, uploads
from tests.contest.conftest import built_on_generated, upload_all_and_close, user
from tests.worker import worker_env  # noqa: F401  (fixture)

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
        cursor.execute(f"UPDATE {type(a)._meta.db_table} SET sha256 = %s WHERE id = %s", ["0" * 64, a.pk])  # noqa: S608 - the table name is the model's own; values are parameters
    with pytest.raises(OSError, match="fails its SHA-256 check"):
        bundles.write_bundle(tmp_path / "b.zip", [bundles.Entry(a.pk)])


@pytest.fixture
def closed(request):
    return built_on_generated(request, "closed", lambda contest, capture: upload_all_and_close(
        contest, {1: ("A1-none", {}), 2: ("A3-kRR", {"eps": 8.0}), 3: ("A1-none", {})}, capture))


def _zip_sha(bundle: Bundle) -> str:
    return hashlib.sha256(bundles.path_of(bundle).read_bytes()).hexdigest()


def test_the_attack_material_is_built_once_at_phase_close(closed):
    rnd = closed.rounds.get()
    built = Bundle.objects.get(contest=closed, kind=Bundle.ATTACK_MATERIAL)
    assert Job.objects.filter(contest=closed, kind="build_bundle", status=Job.SUCCEEDED).count() == 1
    plan = bundles.attack_material_plan(rnd)
    assert built.inputs == plan.inputs and built.round == rnd and bundles.current(plan) == built
    assert _zip_sha(built) == built.sha256 and bundles.path_of(built).stat().st_size == built.size
    # it holds what the plan says: every public set's pubtraces and reference, info files, no secrets
    with zipfile.ZipFile(bundles.path_of(built)) as zf:
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


def test_an_outdated_export_is_never_served_and_is_removed(closed, django_capture_on_commit_callbacks):
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
    assert new.file_name != old.file_name and _zip_sha(new) == new.sha256
    assert not bundles.path_of(old).exists() and not Bundle.objects.filter(pk=old.pk).exists()
    with zipfile.ZipFile(bundles.path_of(new)) as zf:
        assert any(n.startswith("round1/attacks/team002_") and n.endswith("/late.csv") for n in zf.namelist())


def test_a_zip_missing_on_this_machine_is_built_again(closed, django_capture_on_commit_callbacks):
    rnd = closed.rounds.get()
    built = Bundle.objects.get(contest=closed, kind=Bundle.ATTACK_MATERIAL)
    bundles.path_of(built).unlink()  # a new web host, a wiped disk
    plan = bundles.attack_material_plan(rnd)
    assert bundles.current(plan) is None
    with django_capture_on_commit_callbacks(execute=True):
        job = bundles.request_build(plan)
    job.refresh_from_db()
    assert job.status == Job.SUCCEEDED and job.progress == 1.0
    again = bundles.current(plan)
    assert again is not None and again.inputs == built.inputs and _zip_sha(again) == again.sha256


def test_a_failed_build_leaves_no_partial_zip(closed, monkeypatch):
    plan = bundles.export_plan(closed)

    def broken(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(bundles.storage, "iter_bytes", broken)
    with pytest.raises(OSError, match="disk full"):
        bundles.build(plan)
    folder = bundles.bundle_dir()
    assert bundles.current(plan) is None and not list(folder.glob(f"*{plan.inputs[:12]}*"))
    assert not list(folder.glob(".*.part"))


def test_docker_compose_shares_the_bundle_folder_between_web_and_the_results_workers():
    """The workers that build bundles (results queue) and the web servers that stream them see one folder."""
    from pathlib import Path

    import yaml

    from contest import queues
    compose = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text())
    folder = compose["x-app-env"]["TRACECUP_BUNDLE_DIR"]
    builders = [name for name, svc in compose["services"].items() if "worker" in (svc.get("command") or [])
                and queues.QUEUE_OF["build_bundle"] in svc["command"][svc["command"].index("-Q") + 1].split(",")]
    assert builders
    for name in builders + ["web"]:
        mounts = compose["services"][name].get("volumes") or []
        assert any(m.split(":")[1] == folder and m.split(":")[0] in compose["volumes"] for m in mounts), name


def test_a_worker_says_at_start_when_its_bundle_folder_is_not_the_shared_one(tmp_path, settings, make_contest):
    from contest.tasks import check_bundle_folder
    settings.TRACECUP_BUNDLE_DIR = str(tmp_path / "bundles")
    assert bundles.bundle_dir_problems() == [] and check_bundle_folder() == []   # a fresh, writable folder
    contest = make_contest(slug="shared")
    Bundle.objects.create(contest=contest, kind=Bundle.EXPORT, inputs="0" * 64, file_name="everything_shared_1.zip",
                          sha256="0" * 64, size=1, files=1)
    problems = check_bundle_folder()        # the zip the database knows was written on another machine
    assert len(problems) == 1 and "holds 0 of the 1 bundles" in problems[0] and "everything_shared_1.zip" in problems[0]
    (tmp_path / "bundles" / "everything_shared_1.zip").write_bytes(b"zip")
    assert check_bundle_folder() == []
    (tmp_path / "not-a-folder").write_text("a file where the folder should be")
    settings.TRACECUP_BUNDLE_DIR = str(tmp_path / "not-a-folder" / "bundles")
    problems = check_bundle_folder()
    assert len(problems) == 1 and "cannot be written here" in problems[0]


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_with_an_unwritable_bundle_folder_says_so_in_its_log(worker_env, tmp_path):
    import time
    (tmp_path / "a-file").write_text("a file where the shared folder should be mounted")
    worker_env.env["TRACECUP_BUNDLE_DIR"] = str(tmp_path / "a-file" / "bundles")
    worker_env.start(concurrency=1, queues="results")
    deadline = time.time() + 30
    while "bundle folder:" not in worker_env.log_path.read_text() and time.time() < deadline:
        time.sleep(0.3)
    log = worker_env.log_path.read_text()
    assert "bundle folder: TRACECUP_BUNDLE_DIR=" in log and "cannot be written here" in log, log[-2000:]
