"""Security review: secrets stay secret through every REST and page path (rules §1).

Each test probes a path a participant could try: guessing stored-file ids,
reaching another contest's data, reading a failed job's internals. The rules
themselves live in ``contest.permissions``; these tests hit the real views.
"""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from contest.models import AnonymizedSet, Attack, Dataset, Job, JudgeAttackResult, PublicSet, Round, StoredFile
from contest.services import generation, judge, results
from contest.services.setup import create_contest
from tests.contest.conftest import contest_spec, user
from tests.contest.test_permissions import _world

pytestmark = pytest.mark.django_db


def _api(u):
    c = APIClient()
    if u is not None:
        c.force_authenticate(u)
    return c


def _web(u):
    c = Client()
    if u is not None:
        c.force_login(u)
    return c


def _superuser():
    return get_user_model().objects.get_or_create(username="root", defaults={"is_superuser": True,
                                                                             "is_staff": True})[0]


def _readable_ids(u) -> tuple[set[int], set[int]]:
    """Ids of every stored file ``u`` can fetch through /api/files/<id>/ and the page /files/<id>/."""
    api, web = _api(u), _web(u)
    got_api, got_web = set(), set()
    for pk in StoredFile.objects.values_list("pk", flat=True):
        r = api.get(f"/api/files/{pk}/")
        assert r.status_code in (200, 401, 403), (pk, r.status_code)
        if r.status_code == 200:
            got_api.add(pk)
        r = web.get(f"/files/{pk}/")
        assert r.status_code in (200, 302, 403), (pk, r.status_code)
        if r.status_code == 200:
            got_web.add(pk)
    return got_api, got_web


@pytest.mark.slow
def test_guessing_file_ids_reveals_nothing_secret(generated):
    """A team member walks every stored-file id after the close: only what rules §1 grants comes back."""
    w = _world(generated, closed=True)
    alpha = user("alpha1")
    team = w["own_aset"].team
    rnd = generated.rounds.get()
    datasets = list(Dataset.objects.filter(round__contest=generated))
    granted = set()
    for ds in datasets:
        granted.add(ds.reference_id)  # all reference traces after the close
        if ds.team_id == team.pk or ds.kind == Dataset.SAMPLE:
            granted.add(ds.original_id)
    granted |= set(PublicSet.objects.filter(dataset__round=rnd).values_list("pubtraces_id", flat=True))
    granted |= set(AnonymizedSet.objects.filter(team=team).values_list("file_id", flat=True))
    granted |= set(Attack.objects.filter(attacker=team).values_list("file_id", flat=True))
    # The grid/time files are public to teams through /api/rounds/<id>/info_*.csv; either answer is fine here.
    neutral = {rnd.info_region_id, rnd.info_time_id} - {None}
    secret = set()
    for ds in datasets:
        if not (ds.team_id == team.pk or ds.kind == Dataset.SAMPLE):
            secret.add(ds.original_id)
    secret |= set(PublicSet.objects.values_list("ptable_id", flat=True))
    secret |= set(JudgeAttackResult.objects.values_list("output_id", flat=True))
    secret |= set(AnonymizedSet.objects.exclude(team=team).values_list("file_id", flat=True))
    secret |= set(Attack.objects.exclude(attacker=team).values_list("file_id", flat=True))
    if rnd.model_file_id:
        secret.add(rnd.model_file_id)
    assert secret and not (secret & granted)
    got_api, got_web = _readable_ids(alpha)
    for got in (got_api, got_web):
        assert not (got & secret), f"secret files readable: {sorted(got & secret)}"
        assert got - neutral == granted
    # Anonymous users and logged-in outsiders get nothing at all.
    assert _readable_ids(None) == (set(), set())
    outsider = get_user_model().objects.create_user("outsider", password="pw")
    assert _readable_ids(outsider) == (set(), set())


def test_inactive_member_reads_nothing(generated):
    """A deactivated account keeps its membership row but loses every read (sessions and tokens alike)."""
    alpha = user("alpha1")
    own = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    assert _api(alpha).get(f"/api/datasets/{own.pk}/original/").status_code == 200
    alpha.is_active = False
    alpha.save()
    assert _api(alpha).get(f"/api/datasets/{own.pk}/original/").status_code in (401, 403)
    assert _api(alpha).get(f"/api/files/{own.original_id}/").status_code in (401, 403)
    assert _api(alpha).get("/api/contests/tc/datasets/").json() == []


def _second_contest():
    """Contest "other" with its own organizer and teams, data generated, anonymization closed."""
    spec = contest_spec("other")
    spec["contest"]["organizers"] = ["judge2"]
    spec["users"] = [{"username": "judge2", "password": "pw"}]
    for t in spec["teams"]:
        for m in t["members"]:
            m["username"] = "x" + m["username"]
    other = create_contest(spec)
    rnd = other.rounds.get()
    generation.generate_round_data(rnd)
    judge.close_anonymization(rnd)
    return other


@pytest.mark.slow
def test_no_path_crosses_contests(generated):
    """Members and organizers of contest tc see none of contest other's secrets; a superuser sees all."""
    other = _second_contest()
    assert PublicSet.objects.filter(dataset__round__contest=other).exists()
    judge.close_anonymization(generated.rounds.get())
    files = set()
    for ds in Dataset.objects.filter(round__contest=other):
        files |= {ds.reference_id, ds.original_id}
    for ps in PublicSet.objects.filter(dataset__round__contest=other):
        files |= {ps.pubtraces_id, ps.ptable_id}
    for name in ("alpha1", "judge"):
        u = user(name)
        api, web = _api(u), _web(u)
        for pk in files:
            assert api.get(f"/api/files/{pk}/").status_code == 403, (name, pk)
            assert web.get(f"/files/{pk}/").status_code == 403, (name, pk)
        for ds in Dataset.objects.filter(round__contest=other):
            for which in ("reference", "original"):
                assert api.get(f"/api/datasets/{ds.pk}/{which}/").status_code == 403, (name, ds.label, which)
        for ps in PublicSet.objects.filter(dataset__round__contest=other):
            for which in ("pubtraces", "ptable"):
                assert api.get(f"/api/public-sets/{ps.pk}/{which}/").status_code == 403, (name, which)
        assert api.get("/api/contests/other/datasets/").json() == []
        assert api.get("/api/contests/other/public-sets/").json() == []
        assert api.get("/api/contests/other/results/").status_code == 403
        assert api.get("/api/contests/other/jobs/").status_code == 403
        r = api.get("/api/contests/other/me/").json()
        assert r["team"] is None and not r["organizer"] and r["attack_targets"] == []
        assert web.get("/c/other/team/round/1/attack-material.zip").status_code == 403
        assert web.get("/console/other/export.zip").status_code == 403
        assert web.get("/console/other/").status_code == 403
        rnd = Round.objects.get(contest=other)
        assert api.post(f"/api/rounds/{rnd.pk}/generate/").status_code == 403
    # A team of tc cannot attack other's sets either (the public-set id is guessable).
    target = PublicSet.objects.filter(dataset__round__contest=other).first()
    from django.core.files.uploadedfile import SimpleUploadedFile
    r = _api(user("alpha1")).post(f"/api/public-sets/{target.pk}/attacks/",
                                  {"kind": "etable", "file": SimpleUploadedFile("e.csv", b"user_id\n1\n")},
                                  format="multipart")
    assert r.status_code == 403
    root = _api(_superuser())
    for pk in files:
        assert root.get(f"/api/files/{pk}/").status_code == 200


def test_failed_job_internals_are_for_organizers(generated):
    """A failed job's traceback and exception text (paths, file names, ids) are not shown to teams."""
    alpha = user("alpha1")
    trace = ('Traceback (most recent call last):\n  File "/srv/tracecup/contest/services/uploads.py", line 9\n'
             'OSError: stored file 17 (orgtraces_team002_02.csv) fails its SHA-256 check\n')
    job = Job.objects.create(kind="score_attack", contest=generated, args={"attack_id": 1}, status=Job.FAILED,
                             message="failed: stored file 17 (orgtraces_team002_02.csv) fails its SHA-256 check",
                             error=trace, created_by=alpha)
    for name in ("alpha1", "alpha2"):
        body = _api(user(name)).get(f"/api/jobs/{job.pk}/").json()
        assert body["status"] == "failed"
        assert body["error"] == ""
        assert "orgtraces" not in body["message"] and "/srv/" not in body["message"]
    assert _api(user("beta1")).get(f"/api/jobs/{job.pk}/").status_code == 403
    body = _api(user("judge")).get(f"/api/jobs/{job.pk}/").json()
    assert body["error"] == trace and "orgtraces" in body["message"]


def test_results_stay_embargoed_until_published_and_after_unpublish(generated):
    """A computed but unpublished snapshot reaches no participant, through the API or the pages."""
    from contest.services import results
    _world(generated, closed=True)
    results.snapshot(generated)
    parts = ("results", "leaderboard", "attack-matrix", "awards")
    pages = ("leaderboard", "attack-matrix", "awards", "plots")

    def embargoed():
        for u in (None, user("alpha1"), user("beta1")):
            for part in parts:
                assert _api(u).get(f"/api/contests/tc/{part}/").status_code in (401, 403), (u, part)
            assert _api(u).get("/api/contests/tc/results/?live=1").status_code in (401, 403)
            for page in pages:
                r = _web(u).get(f"/c/tc/{page}/")
                assert r.status_code in (200, 302, 403), page
                if r.status_code == 200:
                    assert b"embargo" in r.content, (u, page)
                    assert b"team_totals" not in r.content
    embargoed()
    assert _api(user("judge")).get("/api/contests/tc/results/?live=1").status_code == 200
    results.publish_results(generated)
    assert _api(None).get("/api/contests/tc/leaderboard/").status_code == 200
    results.unpublish_results(generated)
    embargoed()


def test_the_commitment_comes_with_the_pubtraces_and_its_nonce_with_the_results(generated, settings):
    """The commitment hashes a secret nonce with the ID table, so it is no oracle even for m = 20 users:
    participants get it with the pubtraces; the nonce is revealed when the results are published."""
    _world(generated, closed=True)
    ps = PublicSet.objects.filter(dataset__round__contest=generated).first()
    for name in ("alpha1", "beta1"):
        listed = {p["id"]: p for p in _api(user(name)).get("/api/contests/tc/public-sets/").json()}
        assert listed[ps.pk]["commitment"] == ps.commitment and listed[ps.pk]["commitment_nonce"] is None
        me = _api(user(name)).get("/api/contests/tc/me/").json()
        assert me["attack_targets"] and all(p["commitment_nonce"] is None for p in me["attack_targets"])
    judge_view = {p["id"]: p for p in _api(user("judge")).get("/api/contests/tc/public-sets/").json()}
    assert judge_view[ps.pk]["commitment_nonce"] == ps.commitment_nonce
    results.publish_results(generated)
    listed = {p["id"]: p for p in _api(user("alpha1")).get("/api/contests/tc/public-sets/").json()}
    assert listed[ps.pk]["commitment_nonce"] == ps.commitment_nonce


def test_contest_yaml_cannot_take_over_existing_accounts(generated):
    """An organizer creating a contest from YAML cannot reset the password of an existing account
    (a superuser, another contest's organizer or member) and log in as it."""
    root = _superuser()
    root.set_password("root-pass")
    root.save()
    import yaml
    for victim in ("root", "beta1"):
        spec = contest_spec(f"grab-{victim}")
        spec["teams"] = []
        spec["users"] = [{"username": "judge", "password": "judge-pass"}, {"username": victim, "password": "pwned"}]
        r = _api(user("judge")).post("/api/contests/", {"yaml": yaml.safe_dump(spec)}, format="json")
        assert r.status_code == 400, r.content
        assert not user(victim).check_password("pwned")
    assert user("root").check_password("root-pass") and user("beta1").check_password("pw")
    # New accounts get their passwords; the actor may set its own; the command line (no actor) may reset any.
    spec = contest_spec("fresh")
    spec["teams"] = []
    spec["users"] = [{"username": "judge", "password": "new-judge"}, {"username": "newbie", "password": "np"}]
    r = _api(user("judge")).post("/api/contests/", {"yaml": yaml.safe_dump(spec)}, format="json")
    assert r.status_code == 201, r.content
    assert user("newbie").check_password("np") and user("judge").check_password("new-judge")
    spec = contest_spec("by-operator")
    spec["teams"] = []
    spec["users"] = [{"username": "beta1", "password": "reset"}]
    create_contest(spec)
    assert user("beta1").check_password("reset")
