"""The HTML pages through Django's test client: the no-JavaScript flows (forms post normally),
permissions on pages, embargo, downloads and i18n. Jobs run inline (eager Celery, on commit).
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import zipfile

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from contest.models import AnonymizedSet, Bundle, Contest, Dataset, Job, Phase, PublicSet, Team
from contest.services import results
from tests.contest.conftest import built_on_generated, upload_all_and_close
from tests.web.conftest import anonymize_csv, move_phase

pytestmark = pytest.mark.django_db


def _ds(contest, team, challenge):
    return Dataset.objects.get(round__contest=contest, number=team, challenge=challenge)


def _html(response) -> str:
    return response.content.decode()


def _upload(client, contest, ds, content, name="anotraces.csv", **extra):
    return client.post(f"/c/{contest.slug}/team/datasets/{ds.pk}/upload/",
                       {"file": SimpleUploadedFile(name, content)}, **extra)


@pytest.fixture
def closed(request):
    """The generated contest after every team uploaded both sets and the anonymization phase closed."""
    return built_on_generated(request, "closed", lambda contest, capture: upload_all_and_close(
        contest, {1: ("A2-MRLH", {"lambda": 0.0}), 2: ("A3-kRR", {"eps": 8.0}), 3: ("A1-none", {})}, capture))


# ------------------------------------------------------------------ public pages and embargo
def test_public_pages_render_and_results_are_embargoed(closed, client, client_for):
    contest = closed
    for url in ("/", f"/c/{contest.slug}/", f"/c/{contest.slug}/rules/"):
        r = client.get(url)
        assert r.status_code == 200, url
        assert 'href="#main"' in _html(r)  # skip link
    rules = _html(client.get(f"/c/{contest.slug}/rules/"))
    assert "32 × 32" in rules and "s_U ≥ 0.7" in rules and "Asia/Tokyo" in rules
    results.snapshot(contest)  # computed, not published
    for page in ("leaderboard", "attack-matrix", "awards", "plots"):
        r = client.get(f"/c/{contest.slug}/{page}/")
        assert r.status_code == 200
        assert "embargoed" in _html(r) and "data-sortable" not in _html(r), page
    # a team member does not see the results either; the organizer sees a marked preview
    assert "embargoed" in _html(client_for("alpha1").get(f"/c/{contest.slug}/leaderboard/"))
    preview = _html(client_for("judge").get(f"/c/{contest.slug}/leaderboard/"))
    assert "Preview:" in preview and "Alpha" in preview


def test_published_results_show_leaderboard_matrix_awards_plots(closed, client):
    contest = closed
    snap = results.publish_results(contest)
    board = _html(client.get(f"/c/{contest.slug}/leaderboard/"))
    assert "Preview:" not in board and "Tie-break:" in board
    for row in snap.data["team_rounds"]:
        assert f"{row['overall']:.4f}" in board
    assert board.count('data-sortable') == 3  # teams + one table per challenge
    total = _html(client.get(f"/c/{contest.slug}/leaderboard/?round=total"))
    assert "Weighted total" in total
    matrix = _html(client.get(f"/c/{contest.slug}/attack-matrix/"))
    assert 'data-chart="heatmap"' in matrix and "I2-VisitProb" in matrix and "T2-VisitProb" in matrix
    spec = json.loads(re.search(r'<script id="chart-matrix-reidentification" type="application/json">(.*?)</script>',
                                matrix, re.S).group(1))
    assert len(spec["values"]) == len(spec["rows"]) and all(len(r) == len(spec["cols"]) for r in spec["values"])
    awards = _html(client.get(f"/c/{contest.slug}/awards/"))
    for a in snap.data["awards"]:
        assert f"{a['value']:.4f}" in awards
    plots = _html(client.get(f"/c/{contest.slug}/plots/"))
    fig9 = json.loads(re.search(r'<script id="chart-fig9" type="application/json">(.*?)</script>', plots, re.S).group(1))
    team_points = [p for p in fig9["points"] if "benchmark" not in p["group"]]
    xs = [p["x"] for p in team_points]
    ys = [p["y"] for p in team_points]
    if len(xs) >= 2 and np.std(xs) > 0 and np.std(ys) > 0:
        assert fig9["r"] == pytest.approx(float(np.corrcoef(xs, ys)[0, 1]), abs=1e-12)


def test_plots_page_reads_the_correlation_the_results_job_stored(closed, client):
    """Fig. 9's R is computed by the results job and stored in the snapshot; the page only reads it
    (issue 24 item 7). The stored value is the correlation of the valid team sets; overwriting it in
    the snapshot changes what the page shows, so the request computes nothing."""
    contest = closed
    snap = results.publish_results(contest)
    number = max(r["number"] for r in snap.data["standing"]["rounds"] if r["included"])
    team_sets = [s for s in snap.data["sets"] if s["set"]["round"] == number and s["valid"] and not s["benchmark"]]
    stored = snap.data["correlation"][str(number)]
    assert stored["n_sets"] == len(team_sets) >= 2
    xs, ys = [s["s_i_min"] for s in team_sets], [s["s_t_min"] for s in team_sets]
    assert stored["r"] == pytest.approx(float(np.corrcoef(xs, ys)[0, 1]), abs=1e-12)
    snap.data["correlation"][str(number)] = {"r": -0.123456, "n_sets": 99}  # not what the sets give
    snap.save(update_fields=["data"])
    plots = _html(client.get(f"/c/{contest.slug}/plots/?round={number}"))
    assert '<span id="corr-r">-0.123</span>' in plots and "over 99 team sets" in plots


# ------------------------------------------------------------------ no-JS upload flow and errors
def test_upload_without_javascript_scores_and_shows_errors(generated, client_for, django_capture_on_commit_callbacks):
    contest = generated
    alpha = client_for("alpha1")
    ds = _ds(contest, 1, 1)
    dash = _html(alpha.get(f"/c/{contest.slug}/team/"))
    assert "0 of 10 uploads used" in dash and 'enctype="multipart/form-data"' in dash
    good = anonymize_csv(ds, "A2-MRLH", mu_x=1, mu_y=1, **{"lambda": 0.0})
    with django_capture_on_commit_callbacks(execute=True):
        r = _upload(alpha, contest, ds, good)
    aset = AnonymizedSet.objects.get(dataset=ds, seq=1)
    assert r.status_code == 302 and r["Location"] == f"/c/{contest.slug}/team/uploads/{aset.pk}/"
    detail = _html(alpha.get(r["Location"]))
    assert aset.status == AnonymizedSet.VALID, aset.errors  # A2-MRLH(1,1,0) keeps s_U above the floor
    assert f"{aset.s_u:.4f}" in detail and 'http-equiv="refresh"' not in detail  # finished: no refresh
    lines = good.decode().splitlines()
    lines[4] = "1 1"  # duplicate inside a generalized set, on file line 5
    lines[7] = "abc"
    with django_capture_on_commit_callbacks(execute=True):
        r = _upload(alpha, contest, ds, ("\n".join(lines) + "\n").encode())
    bad = AnonymizedSet.objects.get(dataset=ds, seq=2)
    assert bad.status == AnonymizedSet.REJECTED
    page = _html(alpha.get(r["Location"]))
    assert "line 5" in page and "line 8" in page and "abc" in page
    dash = _html(alpha.get(f"/c/{contest.slug}/team/"))
    assert "1 of 10 uploads used" in dash  # the rejected upload does not count
    # choose the final set by a plain form post
    r = alpha.post(f"/c/{contest.slug}/team/uploads/{aset.pk}/select/")
    assert r.status_code == 302
    aset.refresh_from_db()
    assert aset.selected
    # the XHR variant answers JSON with a live-status fragment that polls
    with django_capture_on_commit_callbacks(execute=False):
        r = _upload(alpha, contest, ds, good, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    body = r.json()
    assert r.status_code == 201 and body["ok"] and "data-poll-url" in body["html"]
    # ... and the card's live part (counter, final set, history) re-rendered, with the order to poll it
    assert "2 of 10 uploads used" in body["replace"][f"state-ds-{ds.pk}"] and body["poll"] == [f"state-ds-{ds.pk}"]
    status = alpha.get(f"/c/{contest.slug}/team/uploads/{body['upload_id']}/status.json").json()
    assert status["finished"] is False and status["status"] == "pending"


def test_upload_refused_outside_the_phase_is_explained(generated, client_for):
    contest = generated
    move_phase(contest.rounds.get(), Phase.ANONYMIZATION, -5, -4)
    alpha = client_for("alpha1")
    ds = _ds(contest, 1, 1)
    r = _upload(alpha, contest, ds, b"reg_id\n1\n", HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert r.status_code == 409 and "not open" in r.json()["message"]
    r = _upload(alpha, contest, ds, b"reg_id\n1\n")
    assert r.status_code == 302
    assert "not open" in _html(alpha.get(r["Location"]))
    assert not AnonymizedSet.objects.filter(dataset=ds).exists()


# ------------------------------------------------------------------ permissions on pages
def test_permissions_on_pages(closed, client, client_for):
    contest = closed
    ds1 = _ds(contest, 1, 1)
    alpha, beta = client_for("alpha1"), client_for("beta1")
    # anonymous: dashboards and downloads need a login
    r = client.get(f"/c/{contest.slug}/team/")
    assert r.status_code == 302 and "/login/" in r["Location"]
    assert client.get(f"/files/{ds1.original_id}/").status_code == 403
    # a team member reads its own original, never another team's
    r = alpha.get(f"/files/{ds1.original_id}/")
    assert r.status_code == 200 and b"".join(r.streaming_content).startswith(b"user_id,time_id,reg_id")
    assert beta.get(f"/files/{ds1.original_id}/").status_code == 403
    assert beta.get(f"/c/{contest.slug}/team/datasets/{ds1.pk}/map/").status_code == 403
    aset = AnonymizedSet.objects.filter(dataset=ds1).first()
    assert beta.get(f"/c/{contest.slug}/team/uploads/{aset.pk}/").status_code == 403
    assert beta.get(f"/c/{contest.slug}/team/uploads/{aset.pk}/status.json").status_code == 403
    assert beta.post(f"/c/{contest.slug}/team/uploads/{aset.pk}/select/").status_code == 403
    assert beta.get(f"/files/{aset.file_id}/").status_code == 403
    # ID tables stay secret to organizers
    ps = PublicSet.objects.filter(dataset__round__contest=contest).first()
    assert alpha.get(f"/files/{ps.ptable_id}/").status_code == 403
    assert client_for("judge").get(f"/files/{ps.ptable_id}/").status_code == 200
    # the console is for organizers
    for url in ("/console/", f"/console/{contest.slug}/", f"/console/{contest.slug}/jobs/",
                f"/console/{contest.slug}/export.zip"):
        assert alpha.get(url).status_code == 403, url
    assert alpha.post(f"/console/{contest.slug}/results/publish/").status_code == 403
    assert contest.snapshots.filter(published=True).count() == 0


def test_attack_material_zip_has_manifest_and_checksums(closed, client_for):
    contest = closed
    alpha = client_for("alpha1")
    dash = _html(alpha.get(f"/c/{contest.slug}/team/"))
    assert "Attack targets" in dash and "Download the attack material" in dash
    # built once when the phase closed, by a job; every download streams that zip with its SHA-256
    built = Bundle.objects.get(contest=contest, kind=Bundle.ATTACK_MATERIAL)
    r = alpha.get(f"/c/{contest.slug}/team/round/1/attack-material.zip")
    assert r.status_code == 200
    body = b"".join(r.streaming_content)
    assert r["X-Checksum-SHA256"] == built.sha256 == hashlib.sha256(body).hexdigest()
    assert r["Digest"] == "sha-256=" + base64.b64encode(hashlib.sha256(body).digest()).decode()
    assert built.file_name in r["Content-Disposition"] and built.size == len(body)
    zf = zipfile.ZipFile(io.BytesIO(body))
    manifest = json.loads(zf.read("MANIFEST.json"))
    sums = dict(reversed(line.split("  ")) for line in zf.read("SHA256SUMS").decode().splitlines())
    public = PublicSet.objects.filter(dataset__round__contest=contest).count()
    assert sum(1 for f in manifest["files"] if f["content"] == "pubtraces") == public
    for f in manifest["files"]:
        data = zf.read(f["path"])
        assert hashlib.sha256(data).hexdigest() == f["sha256"] == sums[f["path"]] and len(data) == f["size"]
    assert not any(n.startswith("orgtraces") or n.startswith("ptable") for n in zf.namelist())


def test_team_uploads_an_attack_and_sees_its_score(closed, client_for, django_capture_on_commit_callbacks):
    contest = closed
    beta = client_for("beta1")
    target = PublicSet.objects.get(dataset__round__contest=contest, dataset__number=1, dataset__challenge=1)
    m = contest.users_per_set
    etable = ("user_id\n" + "".join(f"{u}\n" for u in range(1, m + 1))).encode()
    with django_capture_on_commit_callbacks(execute=True):
        r = beta.post(f"/c/{contest.slug}/team/targets/{target.pk}/attack/",
                      {"kind": "etable", "file": SimpleUploadedFile("etable.csv", etable)})
    assert r.status_code == 302
    dash = _html(beta.get(f"/c/{contest.slug}/team/"))
    attack = target.attacks.get()
    assert attack.status == "valid" and f"{attack.score:.4f}" in dash
    # own set: no upload form, a note instead
    own = PublicSet.objects.get(dataset__round__contest=contest, dataset__number=2, dataset__challenge=1)
    assert f'action="/c/{contest.slug}/team/targets/{own.pk}/attack/"' not in dash


def test_an_attack_from_the_page_script_answers_json(closed, client_for, django_capture_on_commit_callbacks):
    """The page script's attack upload: 201 JSON with the message and the target's live card; a form
    without its file is refused as JSON (400), as the anonymized uploads are."""
    contest = closed
    beta = client_for("beta1")
    target = PublicSet.objects.get(dataset__round__contest=contest, dataset__number=1, dataset__challenge=1)
    etable = ("user_id\n" + "".join(f"{u}\n" for u in range(1, contest.users_per_set + 1))).encode()
    url = f"/c/{contest.slug}/team/targets/{target.pk}/attack/"
    with django_capture_on_commit_callbacks(execute=True):
        r = beta.post(url, {"kind": "etable", "file": SimpleUploadedFile("etable.csv", etable)},
                      HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    body = r.json()
    assert r.status_code == 201 and body["ok"] is True and body["message"].startswith("etable #1 ") and body["html"]
    assert list(body["replace"]) == body["poll"] == [f"target-{target.pk}"]
    # the attack's state is shown once, in the target's row (under the form it was also shown in full, so a
    # rejected attack's format errors were listed twice)
    shown = body["html"] + "".join(body["replace"].values())
    assert shown.count("etable #1 —") == 1 and 'data-poll-url' not in body["html"], body["html"]
    refused = beta.post(url, {"kind": "etable"}, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert refused.status_code == 400 and refused.json()["ok"] is False


# ------------------------------------------------------------------ organizer console without JS
def _console_form(**fields) -> dict:
    """The console's contest form (contest and first round), with ``fields`` replacing its values."""
    form = {
        "mode": "form", "c-description": "",
        "c-users_per_set": 12, "c-slots_per_day": 20, "c-s_req": 0.7, "c-lambda_u": 2.0, "c-lambda_t": 2.0,
        "c-utility_convention": "mean-distance", "c-hospital_weight": 10.0, "c-anonymized_upload_limit": 3,
        "c-etable_limit": 2, "c-etraces_limit": 2, "c-time_zone": "Asia/Tokyo",
        "c-award_variant": "2019-v1.4", "c-tie_break": "earlier-final-submission",
        "c-judge_attack_mode": "exact", "c-seed": 7,
        "r-name": "Final", "r-weight": 1.0, "r-ref_days": 1, "r-org_days": 1,
        "r-anonymization_opens": "2020-01-01T10:00", "r-anonymization_closes": "2099-01-01T10:00",
        "r-attack_opens": "2099-01-02T10:00", "r-attack_closes": "2099-01-03T10:00",
    }
    return {**form, **fields}


def test_console_says_why_a_contest_cannot_be_created(db, client_for, monkeypatch):
    """A contest the setup service refuses is not created, and the page shows the service's reason,
    not only "could not be created". The form checks what it can first, so the refusal here is the
    race it cannot see: another organizer took the slug between the form's check and the creation
    (the form's own uniqueness check is switched off to stand for that moment)."""
    from django.contrib.auth import get_user_model

    from contest.web.forms import ContestForm
    get_user_model().objects.create_user("boss", password="x-very-long-pass", is_staff=True)
    boss = client_for("boss")
    form = _console_form(**{"c-name": "Cup", "c-slug": "cup", "c-synthesizer": "city"})
    assert boss.post("/console/", form).status_code == 302
    monkeypatch.setattr(ContestForm, "validate_unique", lambda self: None)
    r = boss.post("/console/", {**form, "c-name": "Second Cup"})
    assert r.status_code == 200 and not Contest.objects.filter(name="Second Cup").exists()
    assert "The contest could not be created: contest.slug: a contest with slug &#x27;cup&#x27; already exists" in _html(r)


@pytest.mark.slow  # a whole round from the console's form: make test runs it, make check does not
def test_console_creates_contest_by_form_and_runs_it(db, client_for, django_capture_on_commit_callbacks):
    from django.contrib.auth import get_user_model
    get_user_model().objects.create_user("boss", password="x-very-long-pass", is_staff=True)
    boss = client_for("boss")
    # the form speaks the organizer's language: labels, help texts and choices
    page = boss.get("/console/", HTTP_ACCEPT_LANGUAGE="ja").content.decode()
    assert "シード" in page and "チャレンジ・ラウンドごと" in page and "最終提出が早いチームが上位" in page
    assert "earlier final submission wins" not in page and "master seed of generation" not in page
    form = _console_form(**{"c-name": "Form Cup", "c-slug": "form-cup", "c-judge_attack_mode": "sample_2019",
                            "c-synthesizer": "city"})
    r = boss.post("/console/", form)
    assert r.status_code == 302 and r["Location"] == "/console/form-cup/"
    contest = Contest.objects.get(slug="form-cup")
    phase = Phase.objects.get(round__contest=contest, kind=Phase.ANONYMIZATION)
    assert phase.opens_at.astimezone(contest.tz).hour == 10  # form times are in the contest's zone
    assert contest.users_per_set == 12 and contest.organizers.filter(username="boss").exists()
    assert contest.judge_attack_mode == "sample_2019"
    for name in ("Red", "Blue"):
        assert boss.post(f"/console/{contest.slug}/teams/add/", {"name": name}).status_code == 302
    red = Team.objects.get(contest=contest, name="Red")
    boss.post(f"/console/{contest.slug}/teams/{red.pk}/approve/", {"approved": "0"})
    red.refresh_from_db()
    assert not red.approved
    boss.post(f"/console/{contest.slug}/teams/{red.pk}/approve/", {"approved": "1"})
    rnd = contest.rounds.get()
    with django_capture_on_commit_callbacks(execute=True):
        r = boss.post(f"/console/{contest.slug}/rounds/{rnd.pk}/generate/")
    job = Job.objects.get(contest=contest, kind="generate_round")
    assert r["Location"] == f"/console/{contest.slug}/jobs/{job.pk}/"
    assert job.status == Job.SUCCEEDED and Dataset.objects.filter(round=rnd).count() == (2 + 3) * 2
    page = _html(boss.get(r["Location"]))
    assert "succeeded" in page and 'http-equiv="refresh"' not in page
    status = boss.get(f"/console/{contest.slug}/jobs/{job.pk}/status.json").json()
    assert status["finished"] and status["progress"] == 1.0
    # publish and unpublish: nothing to publish before a round is played (no zeros published) ...
    refused = _html(boss.post(f"/console/{contest.slug}/results/publish/", follow=True))
    assert "The results were not published: no round has been played yet" in refused
    # the export is built by a job (the page follows it), then served from disk with its checksum
    with django_capture_on_commit_callbacks(execute=True):
        r = boss.get(f"/console/{contest.slug}/export.zip")
    assert r.status_code == 202 and "Export of everything" in _html(r)
    assert Job.objects.filter(contest=contest, kind="build_bundle").latest("pk").status == Job.SUCCEEDED
    poll = boss.get(f"/console/{contest.slug}/export.zip?status=1").json()
    assert poll["finished"] and "everything_" in poll["html"]
    r = boss.get(f"/console/{contest.slug}/export.zip")
    body = b"".join(r.streaming_content)
    assert r.status_code == 200 and r["X-Checksum-SHA256"] == hashlib.sha256(body).hexdigest()
    zf = zipfile.ZipFile(io.BytesIO(body))
    manifest = json.loads(zf.read("MANIFEST.json"))
    assert len(manifest["files"]) == Dataset.objects.filter(round=rnd).count() * 2 + 2
    anon = rnd.phases.get(kind="anonymization")
    with django_capture_on_commit_callbacks(execute=True):  # ... then the round is played (closed)
        boss.post(f"/console/{contest.slug}/phases/{anon.pk}/close/")
    refused = _html(boss.post(f"/console/{contest.slug}/results/publish/", {"round": rnd.number}, follow=True))
    assert "The results were not published: the attack phase of" in refused  # its attacks are still to come
    move_phase(rnd, Phase.ATTACK, -5, -1)
    with django_capture_on_commit_callbacks(execute=True):
        boss.post(f"/console/{contest.slug}/results/publish/", {"round": rnd.number})
    contest.refresh_from_db()
    assert contest.results_published_at is not None
    boss.post(f"/console/{contest.slug}/results/unpublish/")
    contest.refresh_from_db()
    assert contest.results_published_at is None and not contest.snapshots.filter(published=True).exists()


def test_console_picks_a_synthesizer_checks_its_parameters_and_shows_its_budget(
        db, client_for, django_capture_on_commit_callbacks, django_assert_max_num_queries):
    from django.contrib.auth import get_user_model
    get_user_model().objects.create_user("boss", password="x-very-long-pass", is_staff=True)
    boss = client_for("boss")
    form = _console_form(**{"c-name": "DP Cup", "c-slug": "dp-cup", "c-synthesizer": "coloc",
                            "c-synthesizer_params": '{"eps2": 0}'})
    page = _html(boss.post("/console/", form))
    assert "eps2: expected a number in (0, 1000000.0], got 0" in page and not Contest.objects.exists()
    form["c-synthesizer_params"] = '{"K": 4}'                     # a PPMTF+ parameter, not coloc's
    assert "K: expected a known parameter of the coloc synthesizer" in _html(boss.post("/console/", form))
    form["c-synthesizer"] = "gan"
    assert "Select a valid choice" in _html(boss.post("/console/", form))
    form["c-synthesizer"] = "coloc"
    form["c-synthesizer_params"] = json.dumps({"train_users": 30, "train_days": 2, "eps1": 2.0, "min_meetings": 1,
                                               "options": {"theta": 6}})
    r = boss.post("/console/", form)
    assert r.status_code == 302
    contest = Contest.objects.get(slug="dp-cup")
    assert contest.synthesizer == "coloc" and contest.synthesizer_params["options"] == {"theta": 6}
    boss.post(f"/console/{contest.slug}/teams/add/", {"name": "Red"})
    rnd = contest.rounds.get()
    with django_capture_on_commit_callbacks(execute=True):
        boss.post(f"/console/{contest.slug}/rounds/{rnd.pk}/generate/")
    assert Job.objects.get(contest=contest, kind="generate_round").status == Job.SUCCEEDED
    with django_assert_max_num_queries(40):
        page = _html(boss.get(f"/console/{contest.slug}/"))
    # eps1 + eps2 + eps3 = 2 + 1 + 1, all spent on the traces (friends inferred from them)
    assert "Generated by coloc" in page and "training traces 4.0; per user 4.0" in page
    # epsilon per part with the sensitivity its noise is calibrated on (p': 2 / min_users, min_users = 30 - 1)
    assert "friendship probability p&#x27;: ε 2.0, sensitivity 0.0690" in page
    assert "co-location count matrix Q&#x27; (Laplace): ε 1.0, sensitivity 5" in page
    api = boss.get(f"/api/contests/{contest.slug}/").json()["rounds"][0]["synthesizer"]
    assert api["per_user"] == 4.0 and [p[1] for p in api["parts"]] == [2.0, 1.0, 1.0]
    assert api["parts"][2] == ["transition matrix (TPM)", 1.0, 5.0]
    rnd.refresh_from_db()
    planted = sum(s["report"]["colocations_planted"] for s in rnd.manifest["sets"])
    # at most (1 team + 3) x 2 challenges x theta 6; fewer when p' (fresh noise) leaves few friends
    assert 0 <= planted <= 48 and f"{planted} co-locations planted" in page


def test_console_retries_a_failed_job(generated, client_for, django_capture_on_commit_callbacks):
    contest = generated
    failed = Job.objects.create(kind="compute_results", contest=contest, args={"contest_id": contest.pk},
                                status=Job.FAILED, message="failed: boom", error="Traceback: boom")
    judge_client = client_for("judge")
    jobs_page = _html(judge_client.get(f"/console/{contest.slug}/jobs/?status=failed"))
    assert "boom" in jobs_page and "Retry" in jobs_page
    with django_capture_on_commit_callbacks(execute=True):
        r = judge_client.post(f"/console/{contest.slug}/jobs/{failed.pk}/retry/")
    new = Job.objects.exclude(pk=failed.pk).get(contest=contest, kind="compute_results")
    assert r["Location"] == f"/console/{contest.slug}/jobs/{new.pk}/" and new.status == Job.SUCCEEDED
    failed.refresh_from_db()
    assert failed.status == Job.FAILED  # the failed row stays as it was


# ------------------------------------------------------------------ accounts
def test_sign_up_join_team_and_token(generated, client):
    contest = generated
    r = client.post("/signup/", {"username": "newbie", "email": "", "password1": "Tr4ce-Cup-pass!",
                                 "password2": "Tr4ce-Cup-pass!"})
    assert r.status_code == 302 and r["Location"] == "/join/"
    r = client.post("/join/", {"invitation_code": "nope"})
    assert "No team has this invitation code" in _html(r)
    team = Team.objects.get(contest=contest, number=2)
    r = client.post("/join/", {"invitation_code": team.invitation_code})
    assert r.status_code == 302 and r["Location"] == f"/c/{contest.slug}/team/"
    assert "Team 002 Beta" in _html(client.get(r["Location"]))
    other = Team.objects.get(contest=contest, number=3)
    assert "already in another team" in _html(client.post("/join/", {"invitation_code": other.invitation_code}))
    token_page = _html(client.get("/token/"))
    from rest_framework.authtoken.models import Token
    key = Token.objects.get(user__username="newbie").key
    assert key in token_page
    client.post("/token/")
    assert Token.objects.get(user__username="newbie").key != key
    r = client.post("/logout/")
    assert r.status_code == 302
    assert client.get(f"/c/{contest.slug}/team/").status_code == 302


def test_login_page_logs_in(generated, client):
    r = client.post("/login/", {"username": "alpha1", "password": "pw", "next": "/c/tc/team/"})
    assert r.status_code == 302 and r["Location"] == "/c/tc/team/"


# ------------------------------------------------------------------ i18n
def test_english_by_default_and_japanese_on_request(generated, client):
    contest = generated
    page = _html(client.get(f"/c/{contest.slug}/rules/"))
    assert '<html lang="en">' in page and "File formats" in page
    ja = _html(client.get(f"/c/{contest.slug}/rules/", HTTP_ACCEPT_LANGUAGE="ja,en;q=0.5"))
    assert '<html lang="ja">' in ja and "ファイル形式" in ja and "リーダーボード" in ja
    # the switcher in the header sets the cookie (a plain GET form, so pages hold no CSRF token)
    r = client.get("/i18n/setlang/", {"language": "ja", "next": f"/c/{contest.slug}/"})
    assert r.status_code == 302
    page = _html(client.get(f"/c/{contest.slug}/"))
    assert "日程" in page and "本文へスキップ" in page
    strings = json.loads(re.search(r'<script id="tc-i18n" type="application/json">(.*?)</script>', page, re.S).group(1))
    assert strings["deadline_passed"] == "締切を過ぎました"
    client.post("/i18n/setlang/", {"language": "en", "next": "/"})
    assert "Timeline" in _html(client.get(f"/c/{contest.slug}/"))


def test_every_japanese_message_is_translated():
    """The committed catalog is complete and compiled (CI does not run msgfmt)."""
    import gettext
    from pathlib import Path

    import contest.web
    base = Path(contest.web.__file__).parent / "locale" / "ja" / "LC_MESSAGES"
    po = (base / "django.po").read_text(encoding="utf-8")
    blocks = [b for b in po.split("\n\n") if "msgid" in b and 'msgid ""\nmsgstr ""\n"' not in b]
    untranslated = [b for b in blocks if re.search(r'^msgstr(\[0\])? ""$', b, re.M) and "#, fuzzy" not in b]
    assert not untranslated, untranslated[:3]
    mo = gettext.GNUTranslations((base / "django.mo").open("rb"))
    assert mo.gettext("Leaderboard") == "リーダーボード"
    assert len(mo._catalog) >= len(blocks)
