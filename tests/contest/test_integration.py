"""A whole round through the REST API with a REAL Celery worker process (issue item 10).

The worker is ``celery -A contest worker`` started as a subprocess on the test
database (SQLite file by default; PostgreSQL when ``DATABASE_URL`` points to
it) and the configured broker (kombu's filesystem transport by default, Redis
when ``CELERY_BROKER_URL`` says so). Three teams: generate -> download ->
upload (one rejected, one below s_req) -> close -> pseudonymize -> judge
attacks -> cross attacks -> results -> awards. Every score is recomputed
here by calling ``scoring`` directly on the files downloaded through the API,
and the permission rules are checked along the way.
"""
from __future__ import annotations

from contextlib import contextmanager

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from contest.models import Phase
from contest.services.setup import create_contest
from tests.contest.conftest import contest_spec, move_phase
from tests.worker import celery_worker, wait_for_jobs, worker_env  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
USERS = 24


def api(username, password="pw"):
    c = APIClient()
    token = c.post("/api/auth/token/", {"username": username, "password": password}, format="json").json()["token"]
    c.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return c


def get_bytes(client, url, expect=200):
    r = client.get(url)
    assert r.status_code == expect, (url, r.status_code)
    return b"".join(r.streaming_content) if expect == 200 else None



@contextmanager
def step(name: str):
    """Name the step of the scenario a failure happened in (the test walks a whole round)."""
    try:
        yield
    except AssertionError as exc:
        raise AssertionError(f"step {name!r}: {exc}") from exc


def test_whole_round_through_the_api_with_a_real_worker(celery_worker):  # noqa: C901 - one round told end to end, in order
    from scoring import io as sio
    from scoring.algorithms.registry import get
    from scoring.results import AttackRow, SetRef, UtilityRow, compute_results
    from scoring.scores import reidentification, trace_inference, utility

    contest = create_contest(contest_spec(slug="itest", synthesizer="ppmtf", users=USERS,
                                          extra={"judge_attacks": ["I1-rand", "I2-VisitProb", "T1-rand",
                                                                   "T2-VisitProb"]}))
    grid = contest.grid()
    rnd = contest.rounds.get()
    judge = api("judge", "judge-pass")
    teams = {1: api("alpha1"), 2: api("beta1"), 3: api("gamma1")}
    public = APIClient()

    with step('generation by the worker'):
        assert teams[1].post(f"/api/rounds/{rnd.pk}/generate/").status_code == 403
        r = judge.post(f"/api/rounds/{rnd.pk}/generate/")
        assert r.status_code == 202
        wait_for_jobs()
        assert judge.get(f"/api/jobs/{r.json()['id']}/").json()["status"] == "succeeded"

    with step('downloads'):
        listing = {t: {d["label"]: d for d in c.get("/api/contests/itest/datasets/").json()} for t, c in teams.items()}
        originals = {}
        for t, c in teams.items():
            assert {f"team{t:03d}_data01", f"team{t:03d}_data02", "team005_data01", "team006_data02"} <= set(listing[t])
            assert not any(k.startswith(f"team{o:03d}") for o in (1, 2, 3, 4) if o != t for k in listing[t])
            for ch in (1, 2):
                d = listing[t][f"team{t:03d}_data{ch:02d}"]
                raw = get_bytes(c, f"/api/datasets/{d['id']}/original/")
                assert __import__("hashlib").sha256(raw).hexdigest() == d["original"]["sha256"]
                originals[(t, ch)] = (d["id"], sio.read_traces(raw, grid))
                get_bytes(c, f"/api/datasets/{d['id']}/reference/")
        other = listing[2]["team002_data01"]["id"]
        get_bytes(teams[1], f"/api/datasets/{other}/original/", expect=403)
        get_bytes(teams[1], f"/api/datasets/{other}/reference/", expect=403)  # before close
        get_bytes(public, f"/api/datasets/{other}/reference/", expect=401)

    with step('uploads: team 2 IDP first rejected then valid; team 3 TRP below s_req'):
        uploaded = {}

        def upload(t, ch, content, name="anotraces.csv"):
            ds_id = originals[(t, ch)][0]
            r = teams[t].post(f"/api/datasets/{ds_id}/anonymized-sets/", {"file": SimpleUploadedFile(name, content)},
                              format="multipart")
            assert r.status_code == 202, r.content
            return r.json()["id"]

        for t in (1, 2, 3):
            for ch in (1, 2):
                truth = originals[(t, ch)][1]
                if (t, ch) == (2, 1):
                    bad = upload(t, ch, b"reg_id\n5\n1025\n")
                if (t, ch) == (3, 2):
                    anon = get("A3-kRR").run(grid, truth, seed=5, eps=1.0)
                else:
                    anon = get("A2-MRLH").run(grid, truth, seed=t * 10 + ch, mu_x=1, mu_y=1, **{"lambda": 0.05 * t})
                content = sio.to_bytes(sio.write_anotraces, anon)
                uploaded[(t, ch)] = (upload(t, ch, content), utility(grid, truth, sio.read_anotraces(content, grid, truth)))
        wait_for_jobs()
        rejected = teams[2].get(f"/api/anonymized-sets/{bad}/").json()
        assert rejected["status"] == "rejected" and rejected["error_total"] >= 2
        assert any("1025" in str(e["value"]) for e in rejected["errors"])
        for (t, ch), (aid, expected) in uploaded.items():
            row = teams[t].get(f"/api/anonymized-sets/{aid}/").json()
            assert row["s_u"] == pytest.approx(expected, abs=1e-12)
            assert row["status"] == ("invalid" if (t, ch) == (3, 2) else "valid"), row
            assert teams[1 + t % 3].get(f"/api/anonymized-sets/{aid}/").status_code == 403
        assert teams[1].get("/api/contests/itest/public-sets/").json() == []

    with step('close: freeze, pseudonymize, judge attacks (all on the worker)'):
        assert judge.post(f"/api/rounds/{rnd.pk}/close/").status_code == 202
        wait_for_jobs()
        assert Phase.objects.get(round=rnd, kind="anonymization").closed_at is not None
        after = teams[1].post(f"/api/datasets/{originals[(1, 1)][0]}/anonymized-sets/",
                              {"file": SimpleUploadedFile("late.csv", b"reg_id\n")}, format="multipart")
        assert after.status_code == 409 and "not open" in after.json()["error"]["message"]
        targets = {p["label"]: p for p in teams[1].get("/api/contests/itest/public-sets/").json()}
        assert set(targets) == {"team001_data01", "team001_data02", "team002_data01", "team002_data02",
                                "team003_data01", "team004_data01", "team004_data02"}
        get_bytes(teams[1], f"/api/datasets/{other}/reference/")  # references are public to teams now
        get_bytes(teams[1], f"/api/datasets/{other}/original/", expect=403)
        get_bytes(teams[1], f"/api/public-sets/{targets['team002_data01']['id']}/ptable/", expect=403)

        # Secret truth for the cross-check, as the organizer sees it.
        truth_of, f_of = {}, {}
        for label, p in targets.items():
            ds_id = p["reference_dataset"]
            truth_of[label] = sio.read_traces(get_bytes(judge, f"/api/datasets/{ds_id}/original/"), grid)
            _, f_of[label] = sio.read_ptable(get_bytes(judge, f"/api/public-sets/{p['id']}/ptable/"))
        rows_i, rows_t = [], []
        from contest.models import JudgeAttackResult
        for jar in JudgeAttackResult.objects.select_related("public_set__dataset"):
            label = jar.public_set.dataset.label
            out = get_bytes(judge, f"/api/files/{jar.output_id}/")
            get_bytes(teams[1], f"/api/files/{jar.output_id}/", expect=403)
            if jar.kind == "reidentification":
                expected = reidentification(f_of[label], sio.read_etable(out, USERS, USERS))
            else:
                expected = trace_inference(grid, truth_of[label], sio.read_etraces(out, grid, truth_of[label]))
            assert jar.score == pytest.approx(expected, abs=1e-12), (label, jar.algorithm)
            (rows_i if jar.kind == "reidentification" else rows_t).append((label, jar.algorithm, expected, None))
        assert JudgeAttackResult.objects.count() == 4 * len(targets)

    with step('cross attacks'):
        move_phase(rnd, Phase.ATTACK, -1, 5)
        i2, t2 = get("I2-VisitProb"), get("T2-VisitProb")
        for t, c in teams.items():
            for label, p in targets.items():
                if label.startswith(f"team{t:03d}"):
                    r = c.post(f"/api/public-sets/{p['id']}/attacks/", {"kind": "etable", "file": SimpleUploadedFile(
                        "e.csv", b"user_id\n")}, format="multipart")
                    assert r.status_code == 403  # own set
                    continue
                pub = sio.read_pubtraces(get_bytes(c, f"/api/public-sets/{p['id']}/pubtraces/"), grid)
                ref = sio.read_traces(get_bytes(c, f"/api/datasets/{p['reference_dataset']}/reference/"), grid)
                etable = sio.to_bytes(sio.write_etable, i2.run(grid, ref, pub, seed=t))
                etraces = sio.to_bytes(sio.write_etraces, t2.run(grid, ref, pub, seed=t))
                for kind, content in (("etable", etable), ("etraces", etraces)):
                    r = c.post(f"/api/public-sets/{p['id']}/attacks/",
                               {"kind": kind, "file": SimpleUploadedFile(f"{kind}.csv", content)}, format="multipart")
                    assert r.status_code == 202, r.content
                    truth = truth_of[label]
                    if kind == "etable":
                        expected = reidentification(f_of[label], sio.read_etable(content, USERS, USERS))
                        rows_i.append((label, t, expected, r.json()["id"]))
                    else:
                        expected = trace_inference(grid, truth, sio.read_etraces(content, grid, truth))
                        rows_t.append((label, t, expected, r.json()["id"]))
        wait_for_jobs()
        for _label, attacker, expected, attack_id in rows_i + rows_t:
            if attack_id is None:
                continue
            row = teams[attacker].get(f"/api/attacks/{attack_id}/").json()
            assert row["status"] == "valid" and row["score"] == pytest.approx(expected, abs=1e-12)

    with step('results: embargoed, then published'):
        assert public.get("/api/contests/itest/leaderboard/").status_code == 401
        move_phase(rnd, Phase.ATTACK, -5, -1)  # the attack phase is over: publishing is allowed
        assert judge.post("/api/contests/itest/publish/").status_code == 202
        wait_for_jobs()
        board = public.get("/api/contests/itest/leaderboard/").json()
        sets = {s["set"]["key"]: s for s in board["sets"]}
        for label in targets:
            key = f"r1-t{int(label[4:7])}-c{int(label[-2:])}"
            exp_i = min(v for lab, _, v, _ in rows_i if lab == label)
            exp_t = min(v for lab, _, v, _ in rows_t if lab == label)
            assert sets[key]["s_i_min"] == pytest.approx(exp_i, abs=1e-12)
            assert sets[key]["s_t_min"] == pytest.approx(exp_t, abs=1e-12)
        assert sets["r1-t3-c2"]["valid"] is False and sets["r1-t3-c2"]["s_t_min"] == 0

        # The awards equal scoring.results fed with the scores computed here (and the upload times).
        from contest.models import AnonymizedSet, Attack
        times = {a.pk: a.created_at for a in Attack.objects.all()}
        utility_rows = [UtilityRow(SetRef(1, a.dataset.number, a.dataset.challenge), a.s_u, a.valid, a.created_at)
                        for a in AnonymizedSet.objects.filter(final=True).select_related("dataset")]
        utility_rows += [UtilityRow(SetRef(1, 4, ch), 1.0, True, None) for ch in (1, 2)]
        attack_rows = [AttackRow(SetRef(1, int(lab[4:7]), int(lab[-2:])), who, kind, v, times.get(aid))
                       for kind, rows in (("reidentification", rows_i), ("trace_inference", rows_t))
                       for lab, who, v, aid in rows]
        expected = compute_results(teams=[1, 2, 3], round_weights={1: 1.0}, utility=utility_rows,
                                   attacks=attack_rows, benchmark_team=4)
        published = public.get("/api/contests/itest/awards/").json()["awards"]
        assert [(a["award"], a["team_number"]) for a in published] == [
            (a.award if a.award != "overall" else f"overall-{a.place}", a.team) for a in expected.awards]
        for a, e in zip(published, expected.awards):
            assert a["value"] == pytest.approx(e.value, abs=1e-12)
        matrix = public.get("/api/contests/itest/attack-matrix/").json()["matrix"]
        assert len(matrix) == len(expected.matrix)
