"""The REST API: token auth, downloads, uploads, jobs, scores, results, organizer commands, schema."""
from __future__ import annotations

import gzip
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from contest.models import AnonymizedSet, Dataset, Job, Phase, PublicSet, ResultsSnapshot
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
    html = r.content.decode()
    assert r.status_code == 200 and "swagger-ui" in html
    # every script and style of the page is this site's own (the machines have no internet), none inline
    # (the site's Content-Security-Policy): the start script is a file too, /api/docs/?script
    from django.contrib.staticfiles import finders
    assets = re.findall(r'(?:src|href)="([^"]+\.(?:js|css))"', html)
    assert assets and all(a.startswith(("/static/drf_spectacular_sidecar/", "/static/css/")) for a in assets), assets
    assert all(finders.find(a.removeprefix("/static/")) for a in assets)
    assert "<style" not in html and re.findall(r"<script>", html) == []
    start = APIClient().get("/api/docs/?script=")
    assert start.status_code == 200 and start["Content-Type"].startswith("application/javascript")
    assert "/api/schema/" in start.content.decode()


def test_every_operation_is_described_and_files_are_chosen_not_typed(db):
    """The API docs (Swagger UI, from /api/schema/) describe every operation, show no notes meant for
    the code's readers, and offer a file chooser for each file field: Swagger UI draws one for
    ``format: binary``, a text box for ``format: uri``."""
    import yaml
    schema = yaml.safe_load(APIClient().get("/api/schema/").content)
    operations = {(method, path): op for path, ops in schema["paths"].items() for method, op in ops.items()}
    assert len(operations) > 40
    undescribed = [f"{m.upper()} {p}" for (m, p), op in operations.items() if not op.get("description", "").strip()]
    assert undescribed == []
    token = operations[("post", "/api/auth/token/")]["description"]
    assert "Authorization: Token" in token and "axes" not in token and "serializer" not in token.lower()
    files = {f"{name}.{field}": prop for name, comp in schema["components"]["schemas"].items()
             for field, prop in comp.get("properties", {}).items()
             if field == "file" and prop.get("type") == "string"}  # a file sent; a stored one is an object
    assert {"Upload.file", "AttackUpload.file", "TrainingData.file", "ContestCreate.file"} <= set(files)
    assert {k: p.get("format") for k, p in files.items()} == {k: "binary" for k in files}
    upload = operations[("post", "/api/datasets/{id}/anonymized-sets/")]["requestBody"]["content"]
    assert next(iter(upload)) == "multipart/form-data"  # the content type Swagger UI shows first


def test_team_flow_over_the_api(generated, django_capture_on_commit_callbacks):
    """A team's whole round over the API; each step is a function, so a failure names its step."""
    flow = _ApiFlow(generated, django_capture_on_commit_callbacks)
    flow.team_downloads_its_data()
    flow.upload_is_scored_and_visible()
    flow.malformed_upload_is_kept_and_rejected()
    flow.other_teams_cannot_upload_and_errors_are_json()
    flow.select_and_upload_limit()
    flow.organizer_closes_the_phase()
    flow.another_team_attacks()
    flow.results_embargoed_then_published()


class _ApiFlow:
    """The steps of test_team_flow_over_the_api, in order; state passes through attributes."""

    def __init__(self, generated, capture):
        self.generated, self.capture = generated, capture
        self.alpha, self.beta, self.anon = client_for("alpha1"), client_for("beta1"), APIClient()
        self.judge = client_for("judge", "judge-pass")
        self.ds = Dataset.objects.get(round__contest=self.generated, number=1, challenge=1)
        self.rnd = self.generated.rounds.get()

    def team_downloads_its_data(self):
        assert self.anon.get("/api/contests/").status_code == 200
        me = self.alpha.get("/api/contests/tc/me/").json()
        assert me["team"]["number"] == 1 and not me["organizer"]
        listing = self.alpha.get("/api/contests/tc/datasets/").json()
        labels = {d["label"]: d for d in listing}
        assert set(labels) == {"team001_data01", "team001_data02", "team005_data01", "team005_data02",
                               "team006_data01", "team006_data02"}
        assert labels["team001_data01"]["original"] is not None
        r = self.alpha.get(f"/api/datasets/{self.ds.pk}/original/")
        assert r.status_code == 200 and b"".join(r.streaming_content) == storage.read_bytes(self.ds.original)
        assert r["X-Content-SHA256"] == self.ds.original.sha256
        assert self.beta.get(f"/api/datasets/{self.ds.pk}/original/").status_code == 403
        assert self.anon.get(f"/api/datasets/{self.ds.pk}/reference/").status_code in (401, 403)
        assert self.alpha.get(f"/api/files/{self.ds.original.pk}/").status_code == 200
        assert self.beta.get(f"/api/files/{self.ds.original.pk}/").status_code == 403

    def _listed(self, kind: str, pk: int) -> dict:
        """Who finds upload ``pk`` in the contest's list of ``kind``: its team and the organizers only."""
        return {who: pk in {u["id"] for u in getattr(self, who).get(f"/api/contests/tc/{kind}/").json()}
                for who in ("alpha", "beta", "judge")}

    def upload_is_scored_and_visible(self):
        # upload (gzip) -> scored inline (eager jobs) -> visible with job status
        self.content = anonymize_csv(self.ds)
        with self.capture(execute=True):
            r = self.alpha.post(f"/api/datasets/{self.ds.pk}/anonymized-sets/",
                           {"file": SimpleUploadedFile("a.csv.gz", gzip.compress(self.content))}, format="multipart")
        assert r.status_code == 202, r.content
        self.aset = AnonymizedSet.objects.get(pk=r.json()["id"])
        assert self.aset.status == "valid" and self.aset.s_u == pytest.approx(1.0)
        job = Job.objects.get(kind="score_anonymized", args__anonymized_set_id=self.aset.pk)
        r = self.alpha.get(f"/api/jobs/{job.pk}/")
        assert r.status_code == 200 and r.json()["status"] == "succeeded"
        assert client_for("alpha2").get(f"/api/jobs/{job.pk}/").status_code == 200  # a teammate
        assert self.beta.get(f"/api/jobs/{job.pk}/").status_code == 403
        assert self.alpha.get(f"/api/anonymized-sets/{self.aset.pk}/").json()["s_u"] == pytest.approx(1.0)
        assert self.beta.get(f"/api/anonymized-sets/{self.aset.pk}/").status_code == 403
        assert self._listed("anonymized-sets", self.aset.pk) == {"alpha": True, "beta": False, "judge": True}
        scores = self.alpha.get("/api/contests/tc/scores/").json()
        assert [s["value"] for s in scores["utility"]] == [pytest.approx(1.0)]

    def malformed_upload_is_kept_and_rejected(self):
        # a malformed upload: kept, rejected, errors as structured JSON
        with self.capture(execute=True):
            r = self.alpha.post(f"/api/datasets/{self.ds.pk}/anonymized-sets/",
                           {"file": SimpleUploadedFile("bad.csv", b"reg_id\n1\nx\n")}, format="multipart")
        bad = self.alpha.get(f"/api/anonymized-sets/{r.json()['id']}/").json()
        assert bad["status"] == "rejected" and bad["errors"][0]["message"]
        assert {"line", "column", "value", "message"} <= set(bad["errors"][0])

    def other_teams_cannot_upload_and_errors_are_json(self):
        # another team cannot upload for us; errors are JSON
        r = self.beta.post(f"/api/datasets/{self.ds.pk}/anonymized-sets/", {"file": SimpleUploadedFile("a.csv", self.content)},
                      format="multipart")
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
        r = self.alpha.post(f"/api/datasets/{self.ds.pk}/anonymized-sets/", {}, format="multipart")
        assert r.status_code == 400 and "file" in str(r.json()["error"]["issues"])

    def select_and_upload_limit(self):
        # select, limit
        assert self.alpha.post(f"/api/anonymized-sets/{self.aset.pk}/select/").json()["selected"] is True
        self.generated.anonymized_upload_limit = 1
        self.generated.save()
        r = self.alpha.post(f"/api/datasets/{self.ds.pk}/anonymized-sets/", {"file": SimpleUploadedFile("a.csv", self.content)},
                       format="multipart")
        assert r.status_code == 429 and r.json()["error"]["code"] == "limit_reached"

    def organizer_closes_the_phase(self):
        # organizer-only commands
        assert self.alpha.post(f"/api/rounds/{self.rnd.pk}/close/").status_code == 403
        assert self.alpha.post("/api/contests/tc/publish/").status_code == 403
        self.generated.judge_attacks = ["I1-rand", "T1-rand"]
        self.generated.save()
        with self.capture(execute=True):
            r = self.judge.post(f"/api/rounds/{self.rnd.pk}/close/")
        assert r.status_code == 202
        assert Phase.objects.get(round=self.rnd, kind="anonymization").closed_at is not None
        self.ps = PublicSet.objects.get(dataset=self.ds)
        assert self.ps.judge_attacks.count() == 2  # queued and run by the close job

    def another_team_attacks(self):
        # attack phase: beta downloads and attacks alpha's set
        assert self.beta.get(f"/api/public-sets/{self.ps.pk}/pubtraces/").status_code == 200
        assert self.beta.get(f"/api/public-sets/{self.ps.pk}/ptable/").status_code == 403
        assert self.judge.get(f"/api/public-sets/{self.ps.pk}/ptable/").status_code == 200
        assert {p["id"] for p in self.beta.get("/api/contests/tc/me/").json()["attack_targets"]} >= {self.ps.pk}
        move_phase(self.rnd, Phase.ATTACK, -1, 5)
        self.etable = ("user_id\n" + "\n".join(str(u) for u in range(1, self.generated.users_per_set + 1)) + "\n").encode()
        with self.capture(execute=True):
            r = self.beta.post(f"/api/public-sets/{self.ps.pk}/attacks/", {"file": SimpleUploadedFile("e.csv", self.etable),
                                                                  "kind": "etable"}, format="multipart")
        assert r.status_code == 202, r.content
        att = self.beta.get(f"/api/attacks/{r.json()['id']}/").json()
        assert att["status"] == "valid" and 0.0 <= att["score"] <= 1.0
        assert self._listed("attacks", att["id"]) == {"alpha": False, "beta": True, "judge": True}
        r = self.alpha.post(f"/api/public-sets/{self.ps.pk}/attacks/", {"file": SimpleUploadedFile("e.csv", self.etable),
                                                               "kind": "etable"}, format="multipart")
        assert r.status_code == 403  # own set

    def results_embargoed_then_published(self):
        # results: embargoed, then published
        assert self.anon.get("/api/contests/tc/leaderboard/").status_code in (401, 403)
        # nothing is computed in the request: before a results job stored a snapshot there is none to read
        missing = self.judge.get("/api/contests/tc/results/")
        assert missing.status_code == 404 and "snapshot" in missing.json()["error"]["message"]
        with self.capture(execute=True):
            assert self.judge.post("/api/contests/tc/snapshot/").status_code == 202
        preview = self.judge.get("/api/contests/tc/results/")  # the organizers' preview: the stored snapshot
        assert preview.status_code == 200 and preview.json() == ResultsSnapshot.objects.get(contest=self.generated).data
        assert self.anon.get("/api/contests/tc/leaderboard/").status_code in (401, 403)
        r = self.judge.post("/api/contests/tc/publish/")  # the attack phase is open: attacks still to come
        assert r.status_code == 409 and "attack phase" in r.json()["error"]["message"]
        attack = Phase.objects.get(round=self.rnd, kind=Phase.ATTACK)
        with self.capture(execute=True):
            assert self.judge.post(f"/api/phases/{attack.pk}/close/").status_code in (200, 202)
        with self.capture(execute=True):
            assert self.judge.post("/api/contests/tc/publish/").status_code == 202
        board = self.anon.get("/api/contests/tc/leaderboard/")
        assert board.status_code == 200 and board.json()["team_totals"]
        assert self.anon.get("/api/contests/tc/attack-matrix/").json()["matrix"]
        awards = self.anon.get("/api/contests/tc/awards/").json()["awards"]
        assert awards and all("team_name" in a for a in awards)
        with self.capture(execute=True):
            assert self.judge.post("/api/contests/tc/rescore/").status_code == 202
        assert Job.objects.get(kind="rescore").status == "succeeded"


@pytest.mark.slow  # trains and generates a round: make test runs it, make check does not
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
    # permissions.can_create_contest: a team member may not, an organizer of a contest may create another
    other = contest_spec(slug="by-judge")
    other["users"], other["teams"] = [], []
    r = client_for("alpha1").post("/api/contests/", {"yaml": yaml.safe_dump(other)}, format="json")
    assert r.status_code == 403
    r = client_for("judge", "judge-pass").post("/api/contests/", {"yaml": yaml.safe_dump(other)}, format="json")
    assert r.status_code == 201 and r.json()["slug"] == "by-judge"
    bad = yaml.safe_dump({**contest_spec(slug="x"), "version": 9})
    r = client_for("root", "root-pass").post("/api/contests/", {"yaml": bad}, format="json")
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_contest_file"
    # The method and its parameters come in the same file, checked against the method's schema.
    dp = contest_spec(slug="dp", synthesizer="sglt", extra={"synthesizer_params": {"options": {"par_d": 2}}})
    dp["users"], dp["teams"] = [], []
    r = client_for("root", "root-pass").post("/api/contests/", {"yaml": yaml.safe_dump(dp)}, format="json")
    assert r.status_code == 400 and "synthesizer_params.options.par_d: expected a number in [0, 1], got 2" \
        in json.dumps(r.json())
    dp["contest"]["parameters"]["synthesizer_params"] = {"clusters": 20, "options": {"par_d": 0.2, "k": 3}}
    r = client_for("root", "root-pass").post("/api/contests/", {"yaml": yaml.safe_dump(dp)}, format="json")
    assert r.status_code == 201 and r.json()["synthesizer"] == "sglt"
    assert r.json()["rounds"][0]["synthesizer"] is None                      # nothing generated yet


def test_organizer_commands_are_services_with_audit_records(make_contest, django_capture_on_commit_callbacks):
    """Add round/team, approve, join by code, close an attack phase early, unpublish, retry a failed job."""
    from contest.models import AuditLog, ResultsSnapshot, Team
    from contest.services import results
    contest = make_contest()
    judge, alpha = client_for("judge", "judge-pass"), client_for("alpha1")
    window = {"anonymization_opens": "2030-01-01T10:00+09:00", "anonymization_closes": "2030-01-10T17:00+09:00",
              "attack_opens": "2030-01-11T10:00+09:00", "attack_closes": "2030-01-20T17:00+09:00"}
    body = {"name": "Extra", "weight": 0.5, "ref_days": 2, "org_days": 2, **window}
    assert alpha.post("/api/contests/tc/rounds/", body, format="json").status_code == 403
    r = judge.post("/api/contests/tc/rounds/", body, format="json")
    assert r.status_code == 201 and r.json()["number"] == 2
    assert [p["kind"] for p in r.json()["phases"]] == ["anonymization", "attack"]
    bad = {**body, "attack_closes": "2030-01-11T09:00+09:00"}
    r = judge.post("/api/contests/tc/rounds/", bad, format="json")
    assert r.status_code == 400 and "closes must be after opens" in r.content.decode()

    r = judge.post("/api/contests/tc/teams/", {"name": "Delta"}, format="json")
    assert r.status_code == 201 and r.json()["number"] == 4
    delta = Team.objects.get(contest=contest, name="Delta")
    assert judge.post("/api/contests/tc/teams/", {"name": "Delta"}, format="json").status_code == 400
    assert judge.post(f"/api/teams/{delta.pk}/approve/", {"approved": False}, format="json").json()["approved"] is False
    from django.contrib.auth import get_user_model
    get_user_model().objects.create_user("dave", password="pw")
    dave = client_for("dave")
    assert dave.post("/api/teams/join/", {"invitation_code": "nope"}, format="json").status_code == 400
    r = dave.post("/api/teams/join/", {"invitation_code": delta.invitation_code}, format="json")
    assert r.status_code == 200 and "dave" in str(r.json()["members"])
    r = alpha.post("/api/teams/join/", {"invitation_code": delta.invitation_code}, format="json")
    assert r.status_code == 400 and "another team" in r.content.decode()

    attack = Phase.objects.get(round__contest=contest, round__number=1, kind=Phase.ATTACK)
    with django_capture_on_commit_callbacks(execute=True):
        r = judge.post(f"/api/phases/{attack.pk}/close/")
    assert r.status_code == 202 and r.json()["kind"] == "compute_results"
    attack.refresh_from_db()
    assert attack.closed_at is not None and attack.closes_at <= attack.closed_at

    results.publish_results(contest)
    assert judge.post("/api/contests/tc/unpublish/").status_code == 204
    contest.refresh_from_db()
    assert contest.results_published_at is None and not ResultsSnapshot.objects.filter(published=True).exists()

    failed = Job.objects.create(kind="compute_results", contest=contest, args={"contest_id": contest.pk},
                                status=Job.FAILED, error="boom")
    assert alpha.post(f"/api/jobs/{failed.pk}/retry/").status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        r = judge.post(f"/api/jobs/{failed.pk}/retry/")
    assert r.status_code == 202 and r.json()["id"] != failed.pk and r.json()["kind"] == "compute_results"
    failed.refresh_from_db()
    assert failed.status == Job.FAILED and failed.error == "boom"  # the failed row is kept as it was
    assert judge.post(f"/api/jobs/{r.json()['id']}/retry/").status_code == 400  # not failed
    actions = set(AuditLog.objects.filter(contest=contest).values_list("action", flat=True))
    assert {"add_round", "add_team", "unapprove_team", "join_team", "close_phase", "unpublish_results",
            "retry_job"} <= actions


def test_bad_requests_get_readable_field_errors(generated):
    """Input is checked by the serializers; the error names each field in plain words (never a repr)."""
    alpha = client_for("alpha1")
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    r = alpha.post(f"/api/datasets/{ds.pk}/anonymized-sets/", {}, format="multipart")
    err = r.json()["error"]
    assert r.status_code == 400 and err["code"] == "invalid"
    assert err["message"] == "file: No file was submitted."
    assert err["issues"] == [{"field": "file", "message": "No file was submitted."}]
    assert "ErrorDetail" not in r.content.decode()
    r = alpha.post("/api/teams/join/", {"invitation_code": ""}, format="json")
    assert r.status_code == 400 and r.json()["error"]["issues"][0]["field"] == "invitation_code"
    # an organizer command by a team member: the one organizer check answers 403 with its reason
    r = alpha.post("/api/contests/tc/teams/", {"name": "Delta"}, format="json")
    assert r.status_code == 403 and r.json()["error"]["code"] == "permission_denied"
    judge = client_for("judge", "judge-pass")
    r = judge.post("/api/contests/tc/teams/", {"name": "Delta"}, format="json")
    assert r.status_code == 201 and r.json()["name"] == "Delta"
    r = judge.post(f"/api/teams/{r.json()['id']}/approve/", {"approved": "maybe"}, format="json")
    assert r.status_code == 400 and r.json()["error"]["issues"][0]["field"] == "approved"
