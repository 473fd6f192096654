"""The REST API: token auth, downloads, uploads, jobs, scores, results, organizer commands, schema."""
from __future__ import annotations

import gzip

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from contest.models import AnonymizedSet, Dataset, Job, Phase, PublicSet
from contest.services import storage
from tests.contest.conftest import anonymize_csv, move_phase

pytestmark = pytest.mark.django_db


def client_for(username=None, password="pw"):
    c = APIClient()
    if username:
        r = c.post("/api/auth/token/", {"username": username, "password": password}, format="json")
        assert r.status_code == 200, r.content
        c.credentials(HTTP_AUTHORIZATION=f"Token {r.json()['token']}")
    return c


def test_schema_and_docs_are_served(db):
    r = APIClient().get("/api/schema/")
    assert r.status_code == 200 and b"openapi" in r.content and b"/api/datasets/{id}/anonymized-sets/" in r.content
    r = APIClient().get("/api/docs/")
    assert r.status_code == 200 and b"/api/schema/" in r.content and b"anonymized-sets" in r.content


def test_team_flow_over_the_api(generated, django_capture_on_commit_callbacks):
    alpha = client_for("alpha1")
    beta = client_for("beta1")
    anon = APIClient()
    assert anon.get("/api/contests/").status_code == 200
    me = alpha.get("/api/contests/tc/me/").json()
    assert me["team"]["number"] == 1 and not me["organizer"]
    listing = alpha.get("/api/contests/tc/datasets/").json()
    labels = {d["label"]: d for d in listing}
    assert set(labels) == {"team001_data01", "team001_data02", "team005_data01", "team005_data02",
                           "team006_data01", "team006_data02"}
    assert labels["team001_data01"]["original"] is not None
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    r = alpha.get(f"/api/datasets/{ds.pk}/original/")
    assert r.status_code == 200 and b"".join(r.streaming_content) == storage.read_bytes(ds.original)
    assert r["X-Content-SHA256"] == ds.original.sha256
    assert beta.get(f"/api/datasets/{ds.pk}/original/").status_code == 403
    assert anon.get(f"/api/datasets/{ds.pk}/reference/").status_code in (401, 403)
    assert alpha.get(f"/api/files/{ds.original.pk}/").status_code == 200
    assert beta.get(f"/api/files/{ds.original.pk}/").status_code == 403

    # upload (gzip) -> scored inline (eager jobs) -> visible with job status
    content = anonymize_csv(ds)
    with django_capture_on_commit_callbacks(execute=True):
        r = alpha.post(f"/api/datasets/{ds.pk}/anonymized-sets/",
                       {"file": SimpleUploadedFile("a.csv.gz", gzip.compress(content))}, format="multipart")
    assert r.status_code == 202, r.content
    aset = AnonymizedSet.objects.get(pk=r.json()["id"])
    assert aset.status == "valid" and aset.s_u == pytest.approx(1.0)
    job = Job.objects.get(kind="score_anonymized", args__anonymized_set_id=aset.pk)
    r = alpha.get(f"/api/jobs/{job.pk}/")
    assert r.status_code == 200 and r.json()["status"] == "succeeded"
    assert client_for("alpha2").get(f"/api/jobs/{job.pk}/").status_code == 200  # a teammate
    assert beta.get(f"/api/jobs/{job.pk}/").status_code == 403
    assert alpha.get(f"/api/anonymized-sets/{aset.pk}/").json()["s_u"] == pytest.approx(1.0)
    assert beta.get(f"/api/anonymized-sets/{aset.pk}/").status_code == 403
    scores = alpha.get("/api/contests/tc/scores/").json()
    assert [s["value"] for s in scores["utility"]] == [pytest.approx(1.0)]

    # a malformed upload: kept, rejected, errors as structured JSON
    with django_capture_on_commit_callbacks(execute=True):
        r = alpha.post(f"/api/datasets/{ds.pk}/anonymized-sets/",
                       {"file": SimpleUploadedFile("bad.csv", b"reg_id\n1\nx\n")}, format="multipart")
    bad = alpha.get(f"/api/anonymized-sets/{r.json()['id']}/").json()
    assert bad["status"] == "rejected" and bad["errors"][0]["message"]
    assert {"line", "column", "value", "message"} <= set(bad["errors"][0])

    # another team cannot upload for us; errors are JSON
    r = beta.post(f"/api/datasets/{ds.pk}/anonymized-sets/", {"file": SimpleUploadedFile("a.csv", content)},
                  format="multipart")
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    r = alpha.post(f"/api/datasets/{ds.pk}/anonymized-sets/", {}, format="multipart")
    assert r.status_code == 400 and "file" in str(r.json()["error"]["issues"])

    # select, limit
    assert alpha.post(f"/api/anonymized-sets/{aset.pk}/select/").json()["selected"] is True
    generated.anonymized_upload_limit = 1
    generated.save()
    r = alpha.post(f"/api/datasets/{ds.pk}/anonymized-sets/", {"file": SimpleUploadedFile("a.csv", content)},
                   format="multipart")
    assert r.status_code == 429 and r.json()["error"]["code"] == "limit_reached"

    # organizer-only commands
    rnd = generated.rounds.get()
    assert alpha.post(f"/api/rounds/{rnd.pk}/close/").status_code == 403
    assert alpha.post("/api/contests/tc/publish/").status_code == 403
    judge = client_for("judge", "judge-pass")
    generated.judge_attacks = ["I1-rand", "T1-rand"]
    generated.save()
    with django_capture_on_commit_callbacks(execute=True):
        r = judge.post(f"/api/rounds/{rnd.pk}/close/")
    assert r.status_code == 202
    assert Phase.objects.get(round=rnd, kind="anonymization").closed_at is not None
    ps = PublicSet.objects.get(dataset=ds)
    assert ps.judge_attacks.count() == 2  # queued and run by the close job

    # attack phase: beta downloads and attacks alpha's set
    assert beta.get(f"/api/public-sets/{ps.pk}/pubtraces/").status_code == 200
    assert beta.get(f"/api/public-sets/{ps.pk}/ptable/").status_code == 403
    assert judge.get(f"/api/public-sets/{ps.pk}/ptable/").status_code == 200
    assert {p["id"] for p in beta.get("/api/contests/tc/me/").json()["attack_targets"]} >= {ps.pk}
    move_phase(rnd, Phase.ATTACK, -1, 5)
    etable = ("user_id\n" + "\n".join(str(u) for u in range(1, generated.users_per_set + 1)) + "\n").encode()
    with django_capture_on_commit_callbacks(execute=True):
        r = beta.post(f"/api/public-sets/{ps.pk}/attacks/", {"file": SimpleUploadedFile("e.csv", etable),
                                                              "kind": "etable"}, format="multipart")
    assert r.status_code == 202, r.content
    att = beta.get(f"/api/attacks/{r.json()['id']}/").json()
    assert att["status"] == "valid" and 0.0 <= att["score"] <= 1.0
    r = alpha.post(f"/api/public-sets/{ps.pk}/attacks/", {"file": SimpleUploadedFile("e.csv", etable),
                                                           "kind": "etable"}, format="multipart")
    assert r.status_code == 403  # own set

    # results: embargoed, then published
    assert anon.get("/api/contests/tc/leaderboard/").status_code in (401, 403)
    assert judge.get("/api/contests/tc/results/?live=1").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        assert judge.post("/api/contests/tc/publish/").status_code == 202
    board = anon.get("/api/contests/tc/leaderboard/")
    assert board.status_code == 200 and board.json()["team_totals"]
    assert anon.get("/api/contests/tc/attack-matrix/").json()["matrix"]
    awards = anon.get("/api/contests/tc/awards/").json()["awards"]
    assert awards and all("team_name" in a for a in awards)
    with django_capture_on_commit_callbacks(execute=True):
        assert judge.post("/api/contests/tc/rescore/").status_code == 202
    assert Job.objects.get(kind="rescore").status == "succeeded"


def test_generate_endpoint(make_contest, django_capture_on_commit_callbacks):
    contest = make_contest()
    rnd = contest.rounds.get()
    assert client_for("alpha1").post(f"/api/rounds/{rnd.pk}/generate/").status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        r = client_for("judge", "judge-pass").post(f"/api/rounds/{rnd.pk}/generate/")
    assert r.status_code == 202
    assert Job.objects.get(pk=r.json()["id"]).status == "succeeded"
    assert Dataset.objects.filter(round=rnd).count() == 12
    r = client_for("alpha1").get(f"/api/rounds/{rnd.pk}/info_time.csv")
    assert r.status_code == 200 and b"".join(r.streaming_content).startswith(b"ref/org,time_id")


def test_contest_setup_endpoint(db):
    import yaml
    from django.contrib.auth import get_user_model

    from tests.contest.conftest import contest_spec
    get_user_model().objects.create_superuser("root", "root@example.org", "root-pass")
    text = yaml.safe_dump(contest_spec(slug="api-made"))
    r = client_for("root", "root-pass").post("/api/contests/", {"yaml": text}, format="json")
    assert r.status_code == 201 and r.json()["slug"] == "api-made"
    assert [p["kind"] for p in r.json()["rounds"][0]["phases"]] == ["anonymization", "attack"]
    assert r.json()["rounds"][0]["phases"][0]["opens_at_local"].endswith("+09:00")  # Asia/Tokyo
    r = client_for("judge", "judge-pass").post("/api/contests/", {"yaml": text}, format="json")
    assert r.status_code == 403
    bad = yaml.safe_dump({**contest_spec(slug="x"), "version": 9})
    r = client_for("root", "root-pass").post("/api/contests/", {"yaml": bad}, format="json")
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_contest_file"
