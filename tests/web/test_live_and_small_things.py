"""Pages a contestant trusts (issue 12), through Django's test client: the live parts of the team page
(challenge cards, attack targets, job page) render the server's state, errors a person can act on,
and the small things (login landing, no-team page, the Choose button, favicon, demo logins).
The browser suite (tests/browser) checks the same in Chromium without reloads.
"""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from contest.models import AnonymizedSet, Dataset, Job, PublicSet
from contest.services import jobs, uploads
from tests.contest.conftest import user
from tests.web.conftest import anonymize_csv

pytestmark = pytest.mark.django_db


def _ds(contest, team, challenge):
    return Dataset.objects.get(round__contest=contest, number=team, challenge=challenge)


def _upload(client, contest, ds, content, name="anotraces.csv", **extra):
    return client.post(f"/c/{contest.slug}/team/datasets/{ds.pk}/upload/",
                       {"file": SimpleUploadedFile(name, content)}, **extra)


# ------------------------------------------------------------------ live challenge card
def test_challenge_card_state_follows_the_server(generated, client_for, django_capture_on_commit_callbacks,
                                                 django_assert_max_num_queries):
    contest = generated
    alpha = client_for("alpha1")
    ds = _ds(contest, 1, 1)
    good = anonymize_csv(ds, "A1-none")
    with django_capture_on_commit_callbacks(execute=False):  # queued, not scored yet
        r = _upload(alpha, contest, ds, good, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    url = f"/c/{contest.slug}/team/datasets/{ds.pk}/state.json"
    state = alpha.get(url).json()
    assert state["finished"] is False and "1 of 10 uploads used" in state["html"] and "queued" in state["html"]
    aset = AnonymizedSet.objects.get(pk=r.json()["upload_id"])
    job = Job.objects.get(kind="score_anonymized", args__anonymized_set_id=aset.pk)
    # a worker died under it and the sweep queued it again: the card says so, not a frozen "scoring"
    Job.objects.filter(pk=job.pk).update(attempts=1, message="retrying: the worker stopped (attempt 2 of 3)")
    assert "retrying (attempt 2)" in alpha.get(url).json()["html"]
    jobs.execute(job.pk)
    with django_assert_max_num_queries(20):  # a page read: counts and the card's rows, no parsing
        state = alpha.get(url).json()
    aset.refresh_from_db()
    assert aset.status == AnonymizedSet.VALID
    # scored; the card keeps following the server until the privacy preview has come
    assert state["finished"] is False and "attacking…" in state["html"]
    jobs.execute(Job.objects.get(kind="privacy_preview", args__anonymized_set_id=aset.pk).pk)
    with django_assert_max_num_queries(20):
        state = alpha.get(url).json()
    assert state["finished"] is True
    html = state["html"]
    assert f"Privacy preview of upload #{aset.seq}" in html
    # the final-set line and the history mark the default final set; no "Choose" on the set that already counts
    assert f"#{aset.seq}</strong> (default: latest valid)" in html and ">default<" in html
    assert "Choose" not in html
    # a rejected upload does not count, and the card says so once it is judged
    with django_capture_on_commit_callbacks(execute=True):
        _upload(alpha, contest, ds, b"reg_id\n99999\n")
    html = alpha.get(url).json()["html"]
    assert "1 of 10 uploads used" in html and "rejected" in html
    # another team cannot read the card
    assert client_for("beta1").get(url).status_code == 404


def test_choose_is_offered_on_valid_sets_only(generated, client_for, django_capture_on_commit_callbacks):
    contest = generated
    alpha = client_for("alpha1")
    ds = _ds(contest, 1, 1)
    with django_capture_on_commit_callbacks(execute=True):
        _upload(alpha, contest, ds, anonymize_csv(ds, "A1-none"))                       # valid, s_U = 1
        _upload(alpha, contest, ds, anonymize_csv(ds, "A3-kRR", eps=0.01))              # invalid: utility too low
        _upload(alpha, contest, ds, anonymize_csv(ds, "A1-none"))                       # valid, the default
    sets = {a.seq: a for a in AnonymizedSet.objects.filter(dataset=ds)}
    assert sets[2].status == AnonymizedSet.INVALID
    html = alpha.get(f"/c/{contest.slug}/team/datasets/{ds.pk}/state.json").json()["html"]
    assert f"/team/uploads/{sets[1].pk}/select/" in html          # an older valid set can be chosen
    assert f"/team/uploads/{sets[2].pk}/select/" not in html      # an invalid one would score 0: not offered
    assert f"/team/uploads/{sets[3].pk}/select/" not in html      # the default final set is marked instead
    assert 'class="is-final"' in html


# ------------------------------------------------------------------ job page
def test_job_page_live_block_carries_times_attempts_and_retry(generated, client_for, django_assert_max_num_queries):
    contest = generated
    judge = client_for("judge")
    job = jobs.create_job("score_anonymized", contest=contest, dispatch=False, anonymized_set_id=987654)
    page = judge.get(f"/console/{contest.slug}/jobs/{job.pk}/").content.decode()
    assert "status.json?details=1" in page and 'id="job-started">—' in page and "Retry" not in page
    jobs.execute(job.pk)  # fails: no such set
    with django_assert_max_num_queries(12):
        live = judge.get(f"/console/{contest.slug}/jobs/{job.pk}/status.json?details=1").json()
    assert live["finished"] is True and "Retry" in live["html"]
    assert 'id="job-attempts">1<' in live["html"] and 'id="job-finished">—' not in live["html"]


# ------------------------------------------------------------------ errors
def test_empty_file_is_called_empty(generated, client_for):
    contest = generated
    alpha = client_for("alpha1")
    ds = _ds(contest, 1, 1)
    r = _upload(alpha, contest, ds, b"", name="empty.csv", HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert r.status_code == 400
    assert "is empty (0 bytes)" in r.json()["message"] and "Choose a file" not in r.json()["message"]
    r = alpha.post(f"/c/{contest.slug}/team/datasets/{ds.pk}/upload/", {}, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert r.json()["message"] == "Choose a file to upload."
    assert not AnonymizedSet.objects.filter(dataset=ds).exists()


# ------------------------------------------------------------------ small things
def test_login_lands_on_the_users_own_page(generated, client):
    contest = generated
    r = client.post("/login/", {"username": "alpha1", "password": "pw"})
    assert r.status_code == 302 and r["Location"] == f"/c/{contest.slug}/team/"
    client.logout()
    r = client.post("/login/", {"username": "judge", "password": "judge-pass"})
    assert r.status_code == 302 and r["Location"] == "/console/"
    client.logout()
    from django.contrib.auth import get_user_model
    get_user_model().objects.create_user("loner", password="loner-pass")
    r = client.post("/login/", {"username": "loner", "password": "loner-pass"})
    assert r.status_code == 302 and r["Location"] == "/join/"


def test_a_user_without_a_team_gets_a_way_to_join(generated, client):
    contest = generated
    from django.contrib.auth import get_user_model
    client.force_login(get_user_model().objects.create_user("loner", password="x"))
    r = client.get(f"/c/{contest.slug}/team/")
    html = r.content.decode()
    assert r.status_code == 403 and 'href="/join/"' in html and "Not allowed" not in html


def test_team_page_has_round_tabs(generated, client_for):
    contest = generated
    alpha = client_for("alpha1")
    html = alpha.get(f"/c/{contest.slug}/team/").content.decode()
    assert "?round=" not in html  # one round: no tabs
    html = alpha.get(f"/c/{contest.slug}/team/?round=1").content.decode()
    assert "Anonymized sets" in html


def test_favicon_is_served(client):
    r = client.get("/favicon.ico")
    assert r.status_code == 301 and r["Location"].endswith("favicon.ico")


def test_demo_prints_every_login():
    import yaml

    from contest.management.commands.demo import DEMO_YAML, demo_logins
    spec = yaml.safe_load(DEMO_YAML.read_text())
    expected = {u["username"] for u in spec["users"]} | {m["username"] for t in spec["teams"] for m in t["members"]}
    printed = {name for name, _pw, _role in demo_logins()}
    assert printed == expected and "carol" in printed


# ------------------------------------------------------------------ attack targets
def test_target_row_state(closed_unobfuscated, client_for, django_capture_on_commit_callbacks,
                          django_assert_max_num_queries):
    contest = closed_unobfuscated
    from contest.models import Phase
    from tests.contest.conftest import move_phase
    move_phase(contest.rounds.get(), Phase.ATTACK, -1, 24)
    target = PublicSet.objects.get(dataset__round__contest=contest, dataset__number=1, dataset__challenge=1)
    with django_capture_on_commit_callbacks(execute=True):
        uploads.submit_attack(user=user("beta1"), attacker=target.dataset.team.contest.teams.get(number=2),
                              target=target, kind="etable",
                              content=b"user_id\n" + b"".join(b"%d\n" % u for u in range(1, 21)), name="e.csv")
    beta = client_for("beta1")
    with django_assert_max_num_queries(20):  # a page read: the row's attacks and their jobs, nothing scored here
        state = beta.get(f"/c/{contest.slug}/team/targets/{target.pk}/state.json").json()
    assert state["finished"] is True and "s_I = " in state["html"]
    assert "data-label=\"etables left\">1</td>" in state["html"]  # one etable left of two
    # the dashboard says the attack phase is open, and closed once past its deadline (not "not open")
    page = beta.get(f"/c/{contest.slug}/team/").content.decode()
    assert "attack phase open" in page
    move_phase(contest.rounds.get(), Phase.ATTACK, -30, -1)
    page = beta.get(f"/c/{contest.slug}/team/").content.decode()
    assert "attack phase closed" in page and "attack phase not open" not in page


# ------------------------------------------------------------------ validator messages in the page language
def test_every_validator_message_has_a_japanese_translation_with_the_same_placeholders():
    import string

    from django.utils import translation

    from scoring.errors import MESSAGES

    def names(template):
        return sorted(f for _t, f, _s, _c in string.Formatter().parse(template) if f)

    with translation.override("ja"):  # the catalog is in settings.LOCALE_PATHS
        for code, english in MESSAGES.items():
            japanese = translation.gettext(english)
            assert japanese != english, f"{code} is not translated"
            assert names(japanese) == names(english), code


def test_a_binary_upload_is_named_once_and_shown_in_the_page_language(generated, client_for,
                                                                     django_capture_on_commit_callbacks):
    contest = generated
    alpha = client_for("alpha1")
    ds = _ds(contest, 1, 1)
    with django_capture_on_commit_callbacks(execute=True):
        r = _upload(alpha, contest, ds, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    aset = AnonymizedSet.objects.get(dataset=ds)
    assert aset.status == AnonymizedSet.REJECTED and aset.errors[0]["code"] == "not_text"
    html = alpha.get(r["Location"]).content.decode()
    assert html.count("not a text/CSV file") == 1 and html.count("\\x89PNG") == 1 and "\\\\x89" not in html
    alpha.cookies["django_language"] = "ja"
    html = alpha.get(r["Location"]).content.decode()
    assert "テキスト/CSV ファイルではありません" in html and "not a text/CSV file" not in html


def test_your_attacks_cell_shows_the_latest_attempt_and_folds_the_rest(closed_unobfuscated, client_for,
                                                                        django_capture_on_commit_callbacks):
    """Five rejected attempts: one error box in view (the latest), the four earlier ones folded."""
    import re
    contest = closed_unobfuscated
    target = PublicSet.objects.get(dataset__round__contest=contest, dataset__number=1, dataset__challenge=1)
    beta = user("beta1")
    for i in range(5):  # each scored (rejected) before the next, so none counts towards the limit
        with django_capture_on_commit_callbacks(execute=True):
            uploads.submit_attack(user=beta, attacker=beta.memberships.get().team, target=target, kind="etable",
                                  content=f"user_id\n{9000 + i}\n".encode(), name=f"bad{i}.csv")
    html = client_for("beta1").get(f"/c/{contest.slug}/team/").content.decode()
    cell = re.search(rf'id="target-{target.pk}".*?</tr>', html, re.S).group(0)
    shown, folded = cell.split('<details class="attack-older">')
    assert shown.count('class="issues') == 1 and "etable #5" in shown and "#1" not in shown
    assert "4 earlier attempts" in folded and folded.count('class="issues') == 4
