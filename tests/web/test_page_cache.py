"""The one page cache (contest.web.page_cache, issues 14 and 24).

A page is stored under its address (path and normalized ``round``), the
language, the viewer (nobody, or the dashboard's session and CSRF cookie) and
the site's state stamp (newest audit entry, newest end of a job, clock bucket).
These tests go through the real middleware with the cache on and prove each
promise by its meaning: a hit runs no view and no query; it replays
the stored headers (CSP, framing) and never a cookie; signed-in visitors'
pages other than the dashboard are never cached, and the dashboard only for
its own session; what an organizer does or a worker finishes (approving a
team, closing a phase, scoring an upload, publishing) shows at the very next
load of a public page and of the dashboard, without waiting for the clock's
bucket; a flash message is shown once and never stored.
"""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from contest.models import AuditLog, Dataset, Phase
from contest.services import judge, results, teams, uploads
from contest.web import page_cache
from tests.contest.conftest import anonymize_csv, built_on_generated, upload_all_and_close, user

pytestmark = pytest.mark.django_db


@pytest.fixture
def closed(request):
    return built_on_generated(request, "closed", lambda contest, capture: upload_all_and_close(
        contest, {1: ("A3-kRR", {"eps": 10.0}), 2: ("A1-none", {}), 3: ("A1-none", {})}, capture))


@pytest.fixture(autouse=True)
def _stamp_and_bucket_kept_for_the_test(settings):
    """The stamp read and the clock bucket kept longer than a test, so what a test counts (hits, queries)
    does not depend on where its page's 10-s bucket happens to turn: with the default bucket, a test whose
    requests straddled the turn saw a miss where it expected a hit (once in a CI run). The tests about the
    bucket set its length themselves."""
    settings.TRACECUP_PAGE_STAMP_SECONDS = 3600
    settings.TRACECUP_PAGE_CACHE_SECONDS = 3600


def test_an_anonymous_visitor_is_served_the_stored_page_without_running_the_view(
        closed, client, django_assert_num_queries):
    url = f"/c/{closed.slug}/"
    first = client.get(url)
    assert first.status_code == 200 and first["X-Page-Cache"] == "miss"
    with django_assert_num_queries(0):  # the state stamp read by the miss is kept for its second
        again = client.get(url)
    assert again["X-Page-Cache"] == "hit" and again.content == first.content
    for header in ("Content-Security-Policy", "X-Frame-Options", "Content-Language", "Content-Type"):
        assert again[header] == first[header], header
    assert not again.cookies and "csrfmiddlewaretoken" not in again.content.decode()


def test_logged_in_visitors_and_private_pages_are_never_cached(closed, client, client_for):
    url = f"/c/{closed.slug}/"
    alpha = client_for("alpha1")
    signed_in = alpha.get(url)
    assert "X-Page-Cache" not in signed_in and "Signed in as alpha1" in signed_in.content.decode()
    anonymous = client.get(url)
    assert anonymous["X-Page-Cache"] == "miss" and "Signed in as" not in anonymous.content.decode()
    assert "X-Page-Cache" not in alpha.get(url)  # and the stored page is not served to a member
    for path in (f"/c/{closed.slug}/team/", "/login/", "/console/", f"/c/{closed.slug}/leaderboard.csv"):
        client.get(path)
        assert "X-Page-Cache" not in client.get(path), path


def test_publishing_is_seen_at_the_next_request_and_each_language_has_its_page(closed, client):
    url = f"/c/{closed.slug}/leaderboard/"
    before = client.get(url)
    assert "embargoed" in before.content.decode() and client.get(url)["X-Page-Cache"] == "hit"
    results.publish_results(closed)  # audited: a new key
    after = client.get(url)
    assert after["X-Page-Cache"] == "miss" and "embargoed" not in after.content.decode()
    ja = client.get(url, HTTP_ACCEPT_LANGUAGE="ja")
    assert ja["X-Page-Cache"] == "miss" and '<html lang="ja">' in ja.content.decode()
    assert client.get(url, HTTP_ACCEPT_LANGUAGE="ja")["X-Page-Cache"] == "hit"
    assert '<html lang="en">' in client.get(url).content.decode()


def test_an_organizer_approving_a_team_and_closing_a_phase_show_at_the_next_load(
        generated, client, django_capture_on_commit_callbacks):
    url = f"/c/{generated.slug}/"
    newcomer = teams.add_team(generated, "Newcomers", approved=False)
    client.get(url)
    stored = client.get(url)
    assert stored["X-Page-Cache"] == "hit" and "Newcomers" not in stored.content.decode()
    teams.approve_team(newcomer)
    approved = client.get(url)
    assert approved["X-Page-Cache"] == "miss" and "Newcomers" in approved.content.decode()
    assert client.get(url)["X-Page-Cache"] == "hit"
    anonymization = Phase.objects.get(round__contest=generated, kind=Phase.ANONYMIZATION)
    with django_capture_on_commit_callbacks(execute=True):  # the judge's close runs as jobs, here
        judge.close_phase_now(anonymization)
    closed = client.get(url)
    assert "anonymization phase is open" in stored.content.decode()
    assert closed["X-Page-Cache"] == "miss" and "anonymization phase is open" not in closed.content.decode()


def test_a_worker_scoring_an_upload_shows_at_the_next_load_of_the_dashboard(
        generated, client_for, django_capture_on_commit_callbacks):
    """The upload is audited; its scoring is a job of the teams' worker that records no audit entry: the
    job's end is what the next load sees."""
    url = f"/c/{generated.slug}/team/"
    alpha = client_for("alpha1")
    alpha.get(url)  # the CSRF cookie is made
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds,
                                      content=anonymize_csv(ds, "A1-none", seed=1), name="a.csv")
    alpha.get(url)
    pending = alpha.get(url)
    assert pending["X-Page-Cache"] == "hit" and '<span class="badge badge-info">queued</span>' in pending.content.decode()
    audited = AuditLog.objects.count()
    for callback in queued:  # the worker scores the upload
        callback()
    assert AuditLog.objects.count() == audited
    scored = alpha.get(url)
    assert scored["X-Page-Cache"] == "miss" and '<span class="badge badge-ok">valid</span>' in scored.content.decode()


def test_what_the_clock_changes_shows_within_the_bucket(closed, client, settings, monkeypatch):
    """A page is rendered again when its bucket turns, at its own moment (its turn offset)."""
    settings.TRACECUP_PAGE_CACHE_SECONDS = 10
    url = f"/c/{closed.slug}/rules/"
    offset = page_cache.turn_offset(10, f"en::{url}")
    now = [1_000_000.0 - offset + 0.5]      # half a second into one of this page's buckets
    monkeypatch.setattr(page_cache.time, "time", lambda: now[0])
    assert client.get(url)["X-Page-Cache"] == "miss"
    now[0] += 9
    assert client.get(url)["X-Page-Cache"] == "hit"
    now[0] += 1
    assert client.get(url)["X-Page-Cache"] == "miss"
    settings.TRACECUP_PAGE_CACHE_SECONDS = 0
    assert "X-Page-Cache" not in client.get(url)


def test_pages_turn_their_buckets_at_different_moments():
    """The pages' buckets turn spread over the bucket's seconds, not all at the same instant (then every page
    and dashboard rendered again together every 10 s); a page's own turn is always at the same moment."""
    pages = [f"{lang}:{viewer}:/c/demo/{p}" for lang in ("en", "ja") for viewer in ("", "a1b2", "c3d4")
             for p in ("", "leaderboard/", "attack-matrix/", "awards/", "leaderboard/?round=1")]
    offsets = [page_cache.turn_offset(10, page) for page in pages]
    assert all(0 <= o < 10 for o in offsets)
    assert offsets == [page_cache.turn_offset(10, page) for page in pages]
    assert len({int(o) for o in offsets}) >= 7, offsets    # 30 pages land in at least 7 of the 10 seconds


def test_the_language_switcher_is_a_get_form_that_keeps_to_this_site(closed, client):
    page = client.get(f"/c/{closed.slug}/").content.decode()
    assert 'action="/i18n/setlang/" method="get"' in page
    r = client.get("/i18n/setlang/", {"language": "ja", "next": f"/c/{closed.slug}/"})
    assert r.status_code == 302 and r["Location"] == f"/c/{closed.slug}/" and r.cookies["django_language"].value == "ja"
    assert '<html lang="ja">' in client.get(f"/c/{closed.slug}/").content.decode()
    hostile = client.get("/i18n/setlang/", {"language": "xx", "next": "https://evil.example/"})
    assert hostile.status_code == 302 and hostile["Location"] == "/" and "django_language" not in hostile.cookies
    assert client.put("/i18n/setlang/").status_code == 405


def test_a_member_reloading_the_team_page_gets_it_from_the_cache_and_nobody_else_does(closed, client_for):
    url = f"/c/{closed.slug}/team/"
    alpha = client_for("alpha1")
    first = alpha.get(url)  # the CSRF secret is made now: its cookie goes out with this page, not stored
    assert first.status_code == 200 and "X-Page-Cache" not in first
    stored = alpha.get(url)
    assert stored["X-Page-Cache"] == "miss"
    again = alpha.get(url)
    assert again["X-Page-Cache"] == "hit" and again.content == stored.content
    assert again["Content-Security-Policy"] == stored["Content-Security-Policy"]  # the middleware still adds it
    other = client_for("alpha2")  # same team, another member: its own page
    other.get(url)
    mine = other.get(url)
    assert mine["X-Page-Cache"] == "miss" and "Signed in as alpha2" in mine.content.decode()
    teams.approve_team(closed.teams.get(number=2), approved=False)  # an organizer's action: the next load renders
    assert alpha.get(url)["X-Page-Cache"] == "miss"


def test_a_dashboard_hit_runs_no_view(closed, client_for, django_assert_num_queries):
    url = f"/c/{closed.slug}/team/"
    alpha = client_for("alpha1")
    alpha.get(url)
    alpha.get(url)
    with django_assert_num_queries(2):  # the session and its user (login_required); the stamp is kept
        assert alpha.get(url)["X-Page-Cache"] == "hit"


def test_a_page_with_a_flash_message_is_not_stored_and_the_next_load_does_not_repeat_it(closed, client_for):
    url = f"/c/{closed.slug}/team/"
    alpha = client_for("alpha1")
    alpha.get(url)
    assert alpha.get(url)["X-Page-Cache"] == "miss"
    ps = closed.rounds.get().datasets.filter(number=2).first().public_set
    audited = AuditLog.objects.count()
    # refused (no such attack kind): a flash message, nothing audited, so the page's key stays the same
    shown = alpha.post(f"/c/{closed.slug}/team/targets/{ps.pk}/attack/",
                       {"kind": "nonsense", "file": SimpleUploadedFile("e.csv", b"user_id\n1\n")}, follow=True)
    assert AuditLog.objects.count() == audited
    assert 'class="messages"' in shown.content.decode() and "X-Page-Cache" not in shown
    after = alpha.get(url)
    assert after["X-Page-Cache"] == "hit" and 'class="messages"' not in after.content.decode()


def test_unknown_query_parameters_are_served_the_stored_page(closed, client):
    """A cache-busting client (?x=random) makes no new entries: every other visitor keeps the cached page."""
    url = f"/c/{closed.slug}/leaderboard/"
    assert client.get(url)["X-Page-Cache"] == "miss"
    answers = {client.get(f"{url}?x={i}&utm_source=z{i}")["X-Page-Cache"] for i in range(30)}
    assert answers == {"hit"}
    assert client.get(f"{url}?round=1")["X-Page-Cache"] == "miss"  # a parameter the page reads is its own page
    assert client.get(f"{url}?round=01&x=2")["X-Page-Cache"] == "hit"
    assert client.get(f"{url}?round=nonsense")["X-Page-Cache"] == "hit"  # read as the default round


def test_renders_per_client_are_limited_and_others_are_still_served(closed, settings, monkeypatch):
    """The limit counts in the clock's minutes: the test's clock stands at the last second of one (a run
    that straddled a real minute's turn saw a 200 among the 429s), then turns to the next."""
    import types

    from django.test import Client
    settings.TRACECUP_PAGE_RENDERS_PER_MINUTE = 10
    clock = types.SimpleNamespace(time=lambda: 29_000_000 * 60 + 59.9)
    monkeypatch.setattr(page_cache, "time", clock)
    busy, other = Client(REMOTE_ADDR="203.0.113.4"), Client(REMOTE_ADDR="198.51.100.8")
    url = f"/c/{closed.slug}/leaderboard/"
    assert other.get(url).status_code == 200  # stored now
    statuses = [busy.get(f"{url}?round={n}").status_code for n in range(2, 30)]  # each a new page to render
    assert statuses[:10] == [200] * 10 and set(statuses[10:]) == {429}
    limited = busy.get(f"{url}?round=99")
    assert limited.status_code == 429 and limited["Retry-After"] == "60"
    assert busy.get(url).status_code == 200  # a stored page is still served to it
    assert other.get(f"{url}?round=1").status_code == 200
    clock.time = lambda: 29_000_001 * 60.0  # the next minute: ten renders again, then 429
    statuses = [busy.get(f"{url}?round={n}").status_code for n in range(30, 42)]
    assert statuses[:10] == [200] * 10 and set(statuses[10:]) == {429}


def test_the_team_dashboard_is_private_to_the_browser(closed, client_for):
    alpha = client_for("alpha1")
    for _ in range(2):  # rendered, then served from the cache
        response = alpha.get(f"/c/{closed.slug}/team/")
        assert response.status_code == 200 and "private" in response["Cache-Control"]


def test_the_leaderboard_marks_the_viewers_own_team_only(closed, client, client_for):
    """Signed-in visitors' results pages are rendered for them; an anonymous visitor never gets theirs."""
    results.publish_results(closed)
    url = f"/c/{closed.slug}/leaderboard/"
    anonymous = client.get(url).content.decode()
    alpha = client_for("alpha1").get(url).content.decode()
    beta = client_for("beta1").get(url).content.decode()
    assert 'class="is-own"' not in anonymous
    assert alpha.count('class="is-own"') >= 1 and beta.count('class="is-own"') >= 1
    own = lambda html: html.split('class="is-own"', 1)[1].split("</tr>", 1)[0]  # noqa: E731
    assert "Alpha" in own(alpha) and "Beta" in own(beta)
    assert 'class="is-own"' not in client.get(url).content.decode()  # the anonymous page after them


class SomeoneRenders:
    """The page cache, but another request holds every page's rendering."""

    def __init__(self, real):
        self.real = real

    def __getattr__(self, name):
        return getattr(self.real, name)

    def add(self, key, *args, **kwargs):
        return False if key.endswith(":rendering") else self.real.add(key, *args, **kwargs)


def test_at_the_bucket_turn_visitors_get_the_last_rendering_while_one_renders(closed, client, settings,
                                                                             monkeypatch):
    """Every page renders again when the clock bucket turns: the previous bucket's rendering is still there
    for the visitors who arrive meanwhile (kept two buckets: kept one, it expired as the bucket turned and
    every visitor rendered the page at once); past two buckets it is gone."""
    import time

    settings.TRACECUP_PAGE_CACHE_SECONDS = 10
    url = f"/c/{closed.slug}/leaderboard/"
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now)
    first = client.get(url)
    assert first["X-Page-Cache"] == "miss"
    monkeypatch.setattr(page_cache, "cache", SomeoneRenders(page_cache.cache))
    monkeypatch.setattr(time, "time", lambda: now + 10.5)          # the next bucket
    meanwhile = client.get(url)
    assert meanwhile["X-Page-Cache"] == "stale" and meanwhile.content == first.content
    monkeypatch.setattr(time, "time", lambda: now + 20.5)          # two buckets on: no copy that old
    assert client.get(url)["X-Page-Cache"] == "miss"


def test_while_a_changed_page_renders_others_get_its_last_rendering(
        closed, client, monkeypatch):
    """The stamp changes (here: publishing); while one visitor renders the page again, another arriving
    meanwhile gets the last rendering (marked stale) rather than rendering it too; the next visitor after
    the render gets the new page. With no rendering younger than two buckets, a visitor renders it."""
    url = f"/c/{closed.slug}/leaderboard/"
    before = client.get(url)
    assert before["X-Page-Cache"] == "miss" and "embargoed" in before.content.decode()
    results.publish_results(closed)
    real = page_cache.cache
    monkeypatch.setattr(page_cache, "cache", SomeoneRenders(real))
    meanwhile = client.get(url)
    assert meanwhile["X-Page-Cache"] == "stale" and meanwhile.content == before.content
    monkeypatch.setattr(page_cache, "cache", real)
    after = client.get(url)
    assert after["X-Page-Cache"] == "miss" and "embargoed" not in after.content.decode()
    assert client.get(url)["X-Page-Cache"] == "hit"
    # once the last rendering is gone (two buckets), a visitor arriving during a render renders it himself
    real.delete(f"page-latest:en:{url}")   # what two buckets' end does to it
    results.unpublish_results(closed)
    monkeypatch.setattr(page_cache, "cache", SomeoneRenders(real))
    alone = client.get(url)
    assert alone["X-Page-Cache"] == "miss" and "embargoed" in alone.content.decode()


def test_a_change_made_in_another_process_shows_once_the_stamp_read_expires(closed, client, settings):
    """A worker process with its own memory cache cannot delete this process's stamp: its job's end is
    seen when the stamp read expires (TRACECUP_PAGE_STAMP_SECONDS), not at the bucket's turn."""
    import time

    from django.utils import timezone

    from contest.models import Job
    settings.TRACECUP_PAGE_CACHE_SECONDS = 3600
    settings.TRACECUP_PAGE_STAMP_SECONDS = 1
    url = f"/c/{closed.slug}/"
    client.get(url)
    assert client.get(url)["X-Page-Cache"] == "hit"
    # what another process's job end looks like here: the row changes, this process's cache is not told
    Job.objects.create(kind="score_attack", status=Job.SUCCEEDED, finished_at=timezone.now() + timezone.timedelta(days=1))
    assert client.get(url)["X-Page-Cache"] == "hit"   # within the stamp's second
    time.sleep(1.1)
    assert client.get(url)["X-Page-Cache"] == "miss"


def test_recording_an_audit_entry_or_ending_a_job_deletes_the_stamp_now_and_at_commit(
        closed, django_capture_on_commit_callbacks):
    from django.core.cache import cache

    from contest.services import audit, jobs, site_state
    def deleted_now_and_at_commit(change, *keys):
        for key in keys:
            cache.set(key, "read before the change")
        with django_capture_on_commit_callbacks() as at_commit:
            change()
            assert all(cache.get(key) is None for key in keys)
            for key in keys:  # a page load between the change and its commit read the stamp and kept it
                cache.set(key, "read before the commit")
        for callback in at_commit:
            callback()
        assert all(cache.get(key) is None for key in keys)

    alpha = closed.teams.get(number=1)
    deleted_now_and_at_commit(lambda: audit.record("test-action", contest=closed), site_state.KEY, site_state.SHARED_KEY)
    deleted_now_and_at_commit(lambda: audit.record("test-action", contest=closed, for_team=alpha),
                              site_state.KEY, site_state.team_key(alpha.pk))
    assert site_state.stamp() == site_state.read()
    job = jobs.create_job("score_attack", contest=closed, dispatch=False, for_team=alpha, attack_id=0)
    # fails (no such attack): a failed job has ended too
    deleted_now_and_at_commit(lambda: jobs.execute(job.pk), site_state.KEY, site_state.team_key(alpha.pk))


def test_another_teams_upload_and_score_leave_a_dashboard_stored_which_its_own_and_the_organizers_outdate(
        generated, client, client_for, django_capture_on_commit_callbacks):
    """A team's dashboard is kept by its team's stamp: in a deadline's last minute other teams' uploads and
    scores come every moment and do not change it; its own do, and so does nobody's team's (an announcement),
    and a visitor who changed teams gets the new team's page, kept by the new team's stamp."""
    from contest.services import announcements
    url, public = f"/c/{generated.slug}/team/", f"/c/{generated.slug}/"
    alpha, beta = generated.teams.get(number=1), generated.teams.get(number=2)

    def upload(username, team):
        ds = Dataset.objects.get(round__contest=generated, team=team, challenge=1)
        with django_capture_on_commit_callbacks(execute=True):  # stored, then scored by the worker
            return uploads.submit_anonymized_set(user=user(username), dataset=ds,
                                                 content=anonymize_csv(ds, "A1-none", seed=1), name="a.csv")

    page = client_for("alpha1")
    page.get(url)  # the CSRF cookie is made
    assert page.get(url)["X-Page-Cache"] == "miss" and page.get(url)["X-Page-Cache"] == "hit"
    client.get(public)
    theirs = upload("beta1", beta)
    assert AuditLog.objects.get(action="upload_anonymized", object_id=str(theirs.pk)).team == beta
    assert client.get(public)["X-Page-Cache"] == "miss"  # the site's stamp moved
    assert page.get(url)["X-Page-Cache"] == "hit"        # alpha's did not
    ours = upload("alpha1", alpha)
    mine = page.get(url)
    assert mine["X-Page-Cache"] == "miss" and f"/team/uploads/{ours.pk}/" in mine.content.decode()
    assert page.get(url)["X-Page-Cache"] == "hit"
    announcements.announce(generated, title="Deadline moved", body="by an hour", email=False)
    told = page.get(url)
    assert told["X-Page-Cache"] == "miss" and "Deadline moved" in told.content.decode()

    moved = client_for("alpha2")
    moved.get(url)
    assert moved.get(url)["X-Page-Cache"] == "miss" and moved.get(url)["X-Page-Cache"] == "hit"
    teams.remove_member(alpha, user("alpha2"))
    teams.join_team(user("alpha2"), beta.invitation_code)
    now_beta = moved.get(url)
    assert now_beta["X-Page-Cache"] == "miss" and f"/team/uploads/{theirs.pk}/" in now_beta.content.decode()
    assert moved.get(url)["X-Page-Cache"] == "hit"
    upload("beta1", beta)
    assert moved.get(url)["X-Page-Cache"] == "miss"  # kept by Beta's stamp now


def test_a_made_up_session_cookie_or_api_token_is_an_anonymous_visitor(closed, settings, client_for, monkeypatch):
    """A client sending a random ``sessionid`` (and messages cookie, and ``Authorization: Token``) on every
    request is served the stored page and is held to the anonymous render limit: counted by the cookie's
    presence, it skipped both and cut everyone's throughput fivefold. The limit counts in the clock's minutes,
    so the test's clock stands still inside one (a slow run straddled a real minute's turn and saw a 200
    among the 429s)."""
    import secrets
    import types

    from django.test import Client
    settings.TRACECUP_PAGE_RENDERS_PER_MINUTE = 10
    monkeypatch.setattr(page_cache, "time", types.SimpleNamespace(time=lambda: 29_000_000 * 60 + 30.0))
    url = f"/c/{closed.slug}/leaderboard/"

    def forger():
        c = Client(REMOTE_ADDR="203.0.113.4", HTTP_AUTHORIZATION=f"Token {secrets.token_hex(20)}")
        c.cookies[settings.SESSION_COOKIE_NAME] = secrets.token_hex(16)
        c.cookies["messages"] = secrets.token_hex(8)
        return c

    assert Client().get(url)["X-Page-Cache"] == "miss"
    assert {forger().get(url).get("X-Page-Cache") for _ in range(20)} == {"hit"}
    rendered = forger().get(f"{url}?round=1")               # rendered for it, as for anyone: stored
    assert rendered.get("X-Page-Cache") == "miss" and not rendered.cookies
    assert Client().get(f"{url}?round=1")["X-Page-Cache"] == "hit"
    statuses = [forger().get(f"{url}?round={n}").status_code for n in range(2, 30)]  # each a new page to render
    assert statuses[:9] == [200] * 9 and set(statuses[9:]) == {429}  # one render of its minute was round 1's
    alpha = client_for("alpha1").get(url)                   # a real session is still rendered for its user
    assert "X-Page-Cache" not in alpha and "Signed in as alpha1" in alpha.content.decode()
