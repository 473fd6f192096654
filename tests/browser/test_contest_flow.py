"""End to end in headless Chromium: an organizer sets up a contest and starts generation; a team
member downloads its data, uploads an anonymized set with the file picker, watches it get scored,
sees an invalid file's per-line errors; the organizer closes the phase and publishes; the public
leaderboard shows the published result. A screenshot of every main page is saved on the way.
"""
from __future__ import annotations

import re

import pytest
import yaml

from tests.browser.layout import chart_problems, overflow_problems
from tests.contest.conftest import anonymize_csv, contest_spec
from tests.worker import wait_for_jobs

pytestmark = [pytest.mark.browser, pytest.mark.integration]

PASSWORD = "a-long-organizer-pass"
SCORED = re.compile(r"^\s*(valid|invalid: utility too low)\s*$")  # the badge once s_U is known


UNLABELLED_JS = """() => Array.from(document.querySelectorAll('input, select, textarea, button'))
  .filter(el => el.type !== 'hidden' && el.offsetParent !== null)
  .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                && !(el.tagName === 'BUTTON' && el.textContent.trim()))
  .map(el => el.outerHTML.slice(0, 120))"""


def assert_labelled(page):
    """Every visible form control has a label (or an accessible name): keyboard and screen-reader use."""
    missing = page.evaluate(UNLABELLED_JS)
    assert not missing, f"unlabelled controls on {page.url}: {missing}"


def login(page, base, username, password, lands_on=None):
    page.goto(f"{base}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state()
    if lands_on:  # a login lands on the user's own page: the team's, or the console for an organizer
        assert page.url == base + lands_on, page.url


def test_whole_round_in_the_browser(live_server, celery_worker_process, browser, shot, readme_shot, tmp_path):
    from django.contrib.auth import get_user_model

    from contest.models import AnonymizedSet, Contest, Dataset, Job
    from contest.services import uploads

    base = live_server.url
    User = get_user_model()
    User.objects.create_user("organizer", password=PASSWORD, is_staff=True)

    # ---- organizer: create the contest from YAML, start generation, watch it finish
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    org = ctx.new_page()
    login(org, base, "organizer", PASSWORD, lands_on="/console/")
    org.goto(f"{base}/console/")
    assert_labelled(org)
    shot(org, "console-home")
    spec = contest_spec("web")
    org.locator("#id_y-yaml_text").fill(yaml.safe_dump(spec, sort_keys=False))
    org.get_by_role("button", name="Create from YAML").click()
    org.wait_for_url(re.compile(r"/console/web/$"))
    contest = Contest.objects.get(slug="web")
    assert contest.organizers.filter(username="organizer").exists()
    org.get_by_role("button", name=re.compile("Start data generation")).click()
    org.wait_for_url(re.compile(r"/console/web/jobs/\d+/$"))
    # live status on the job page: the poller replaces the badge when the worker finishes
    org.locator("#job-live .badge", has_text="succeeded").wait_for(timeout=180_000)
    # the rest of the job's block follows the server too (no reload): times and attempts
    assert org.locator("#job-started").inner_text().strip() != "—"
    assert org.locator("#job-finished").inner_text().strip() != "—"
    assert org.locator("#job-attempts").inner_text().strip() == "1"
    shot(org, "console-job-generation")
    # a job that fails while its page is open: Retry appears without a reload
    from contest.services import jobs as job_service
    broken = job_service.create_job("score_anonymized", contest=contest, dispatch=False, anonymized_set_id=987654)
    org.goto(f"{base}/console/web/jobs/{broken.pk}/")
    assert org.locator("#job-live").get_by_role("button", name="Retry").count() == 0
    assert org.locator("#job-started").inner_text().strip() == "—"
    job_service.send(broken)
    org.locator("#job-live").get_by_role("button", name="Retry").wait_for(timeout=60_000)
    assert org.locator("#job-attempts").inner_text().strip() == "1"
    assert org.locator("#job-finished").inner_text().strip() != "—"
    broken.delete()  # the rest of the round expects no failed job
    # the generation job trained the model and queued a job per data set: the round is ready after them
    wait_for_jobs(contest, kinds=("generate_dataset",))
    assert Dataset.objects.filter(round__contest=contest).count() == (3 + 3) * 2

    # ---- team member: downloads, upload by file picker, live scoring, an invalid file's errors
    team_ctx = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    alpha = team_ctx.new_page()
    login(alpha, base, "alpha1", "pw", lands_on="/c/web/team/")
    alpha.goto(f"{base}/c/web/team/")
    ds = Dataset.objects.get(round__contest=contest, team__number=1, challenge=1)
    with alpha.expect_download() as dl:
        alpha.get_by_role("link", name=ds.original.name).click()
    saved = tmp_path / ds.original.name
    dl.value.save_as(saved)
    assert saved.read_bytes().startswith(b"user_id,time_id,reg_id")

    good = tmp_path / "anotraces_team001_data01.csv"
    good.write_bytes(anonymize_csv(ds, "A2-MRLH", mu_x=1, mu_y=1, **{"lambda": 0.1}))
    card = alpha.locator(f"#ds-{ds.pk}")
    card.locator("input[type=file]").set_input_files(str(good))
    card.get_by_role("button", name="Upload").click()
    result = alpha.locator(f"#result-ds-{ds.pk}")
    # the README's "team dashboard during scoring": the answer of the upload itself is still pending
    result.locator(".live-status").first.wait_for()
    if result.locator(".badge", has_text=SCORED).count() == 0:
        card.scroll_into_view_if_needed()
        readme_shot(alpha, "team-dashboard-scoring")
    result.locator(".badge", has_text=SCORED).first.wait_for(timeout=120_000)
    text = result.inner_text()
    assert "s_U" in text and re.search(r"s_U = 0\.\d{4}|s_U = 1\.0000", text), text
    # live widgets, without a reload: the transient line gives way to the result; the counter,
    # the final-set marker and the history show the server's state
    history = alpha.locator(f"#history-ds-{ds.pk}")
    history.locator("tr", has_text="#1").locator(".badge", has_text=SCORED).wait_for(timeout=30_000)
    assert "validating and scoring" not in card.inner_text()
    assert card.locator("progress").first.is_hidden()
    assert "1 of 10 uploads used" in alpha.locator(f"#counter-ds-{ds.pk}").inner_text()
    final_line = alpha.locator(f"#final-ds-{ds.pk}").inner_text()
    if result.locator(".badge", has_text=SCORED).first.inner_text().strip() == "valid":
        assert "#1" in final_line and "default" in final_line, final_line
    assert_labelled(alpha)
    shot(alpha, "team-dashboard-after-upload")
    aset = AnonymizedSet.objects.get(dataset=ds, seq=1)
    assert aset.status in (AnonymizedSet.VALID, AnonymizedSet.INVALID) and aset.s_u is not None
    assert f"{aset.s_u:.4f}" in text

    bad = tmp_path / "anotraces_bad.csv"
    lines = good.read_text().splitlines()
    lines[3] = "99999"
    bad.write_text("\n".join(lines) + "\n")
    card.locator("input[type=file]").set_input_files(str(bad))
    card.get_by_role("button", name="Upload").click()
    result.locator(".issues li").first.wait_for(timeout=120_000)
    issues = result.locator(".issues").inner_text()
    assert "line 4" in issues and "99999" in issues, issues
    shot(alpha, "team-upload-errors")
    rejected = AnonymizedSet.objects.get(dataset=ds, seq=2)
    assert rejected.status == AnonymizedSet.REJECTED
    # the history gains the rejected upload and the counter does not count it, without a reload
    history.locator("tr", has_text="#2").locator(".badge", has_text="rejected").wait_for(timeout=30_000)
    assert "1 of 10 uploads used" in alpha.locator(f"#counter-ds-{ds.pk}").inner_text()
    assert "validating and scoring" not in card.inner_text()
    # errors a person can act on: a binary file is named as such, once, escaped once
    binary = tmp_path / "photo.csv"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    card.locator("input[type=file]").set_input_files(str(binary))
    card.get_by_role("button", name="Upload").click()
    result.locator(".issues", has_text="not a text/CSV file").wait_for(timeout=120_000)
    issues = result.locator(".issues").inner_text()
    assert issues.count("not a text/CSV file") == 1 and issues.count("\\x89PNG") == 1, issues
    assert "\\\\x89" not in issues and "\ufffd" not in issues, issues  # no second escaping, no missing glyphs
    assert not overflow_problems(alpha, strict=False)
    # an empty file is called empty, as the widget says "Chosen: empty.csv (0 B)"
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    card.locator("input[type=file]").set_input_files(str(empty))
    assert "empty.csv (0\xa0B)" in card.locator(".dz-file").inner_text()  # the size rule's units, unbroken
    card.get_by_role("button", name="Upload").click()
    result.locator(".msg-error", has_text="is empty (0 bytes)").wait_for()
    assert "Choose a file" not in card.inner_text()
    assert card.inner_text().count("is empty (0 bytes)") == 1
    # drag and drop: a file dropped on the TRP drop zone is uploaded the same way
    ds2 = Dataset.objects.get(round__contest=contest, team__number=1, challenge=2)
    dropped = anonymize_csv(ds2, "A1-none").decode()
    zone = alpha.locator(f"#ds-{ds2.pk} .dropzone")
    transfer = alpha.evaluate_handle(
        "text => { const dt = new DataTransfer(); "
        "dt.items.add(new File([text], 'anotraces_team001_data02.csv', {type: 'text/csv'})); return dt; }", dropped)
    zone.dispatch_event("dragenter", {"dataTransfer": transfer})
    assert "is-dragover" in (zone.get_attribute("class") or "")
    zone.dispatch_event("drop", {"dataTransfer": transfer})
    assert "anotraces_team001_data02.csv" in alpha.locator(f"#ds-{ds2.pk} .dz-file").inner_text()
    alpha.locator(f"#ds-{ds2.pk}").get_by_role("button", name="Upload").click()
    alpha.locator(f"#result-ds-{ds2.pk} .badge", has_text=SCORED).first.wait_for(timeout=120_000)
    assert AnonymizedSet.objects.get(dataset=ds2, seq=1).s_u == 1.0

    # the countdown ticks and names both time zones
    countdown = alpha.locator("[data-countdown] .countdown").first
    assert re.fullmatch(r"(\d+d )?\d\d:\d\d:\d\d", countdown.inner_text().strip()), countdown.inner_text()
    zones = alpha.locator("[data-countdown] .countdown-zones").first.inner_text()
    assert "contest time" in zones and "your time" in zones
    # the one format of a time, as the page's own times: "2026-11-21 06:54 JST" (not "Dec 5, 2026, 06:54 AM GMT+9")
    page_time = re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d [A-Z]+", alpha.locator("main").inner_text())
    contest_part = zones.split("(contest time)")[0].strip()
    assert page_time and re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d [A-Z]{2,5}", contest_part), (zones, page_time)
    assert contest_part.split()[-1] == page_time.group().split()[-1], (zones, page_time.group())

    alpha.goto(f"{base}/c/web/team/uploads/{rejected.pk}/")
    shot(alpha, "team-upload-detail-errors")
    alpha.goto(f"{base}/c/web/team/datasets/{ds.pk}/map/")
    alpha.locator("figure[data-chart=gridmap] svg").first.wait_for()
    assert alpha.locator("figure[data-chart=gridmap] svg").count() == 2
    # map coordinates agree with the rules' formula r = y*32 + x + 1 (x, y from 0), in the table and the tips
    for row in alpha.locator("main table tbody tr").all():
        region, x, y = (int(c) for c in row.locator("th, td").all_inner_texts()[:3])
        assert region == y * 32 + x + 1, (region, x, y)
    tip = alpha.locator("figure[data-chart=gridmap] svg rect title").first.text_content()
    assert tip.startswith("region 1 (x 0, y 0)"), tip
    assert "r = y·32 + x + 1" in alpha.inner_text("main")
    shot(alpha, "team-population-map")
    # Choose is offered on valid sets only: not on the rejected one, nor on the set that already counts
    alpha.goto(f"{base}/c/web/team/")
    assert alpha.locator(f"#history-ds-{ds.pk} tr", has_text="rejected").get_by_role("button", name="Choose").count() == 0
    assert alpha.locator(f"#history-ds-{ds.pk} tr.is-final").get_by_role("button", name="Choose").count() == 0
    # /favicon.ico is served (a static file), not a 404
    assert alpha.request.get(f"{base}/favicon.ico").status == 200

    # the other sets of the round arrive through the service (same path as the API)
    for t in (1, 2, 3):
        for ch in (1, 2):
            d = Dataset.objects.get(round__contest=contest, team__number=t, challenge=ch)
            if AnonymizedSet.objects.filter(dataset=d).exclude(status=AnonymizedSet.REJECTED).exists():
                continue
            member = User.objects.get(username=f"{d.team.name.lower()}1")
            algo = {1: ("A3-kRR", {"eps": 6.0}), 2: ("A2-MRLH", {"lambda": 0.2}), 3: ("A1-none", {})}[t]
            content = anonymize_csv(d, algo[0], seed=t * 10 + ch, **algo[1])
            uploads.submit_anonymized_set(user=member, dataset=d, content=content,
                                          name=f"anotraces_team{t:03d}_data{ch:02d}.csv")
    wait_for_jobs(contest, kinds=["score_anonymized"])

    # ---- organizer: close the anonymization phase (freeze, pseudonymize, judge attacks), publish
    org.goto(f"{base}/console/web/")
    assert_labelled(org)
    shot(org, "console-contest")
    org.once("dialog", lambda d: d.accept())
    org.get_by_role("button", name=re.compile(r"Close now\s+anonymization")).click()
    org.wait_for_url(re.compile(r"/console/web/jobs/\d+/$"))
    org.locator("#job-live .badge", has_text="succeeded").wait_for(timeout=180_000)
    wait_for_jobs(contest, timeout=240)

    alpha.goto(f"{base}/c/web/team/")
    alpha.locator("h3", has_text="Attack targets").wait_for()
    with alpha.expect_download() as dl:
        alpha.get_by_role("link", name=re.compile("Download the attack material")).click()
    zpath = tmp_path / "material.zip"
    dl.value.save_as(zpath)
    import zipfile
    with zipfile.ZipFile(zpath) as zf:
        names = zf.namelist()
        assert "MANIFEST.json" in names and "SHA256SUMS" in names
        assert any(n.startswith("pubtraces") for n in names)
    shot(alpha, "team-attack-targets")

    # attack phase: a Beta member uploads an etable against Alpha's IDP set and sees its score live
    from contest.models import Phase, PublicSet
    from tests.contest.conftest import move_phase
    move_phase(contest.rounds.get(), Phase.ATTACK, -1, 24)
    beta = team_ctx.new_page()
    team_ctx.clear_cookies()
    login(beta, base, "beta1", "pw")
    target = PublicSet.objects.get(dataset__round__contest=contest, dataset__number=1, dataset__challenge=1)
    etable = tmp_path / "etable_team002-001_data01.csv"
    etable.write_text("user_id\n" + "".join(f"{u}\n" for u in range(1, contest.users_per_set + 1)))
    beta.goto(f"{base}/c/web/team/")
    row = beta.locator(f"#ps-{target.pk}")
    row.get_by_label("Kind", exact=True).select_option("etable")
    row.locator("input[type=file]").set_input_files(str(etable))
    row.get_by_role("button", name=re.compile("Upload")).click()
    # the attack's state is followed in its target's row; the box under the form only says it arrived
    beta.locator(f"#target-{target.pk} .badge", has_text=re.compile(r"^\s*scored\s*$")).wait_for(timeout=120_000)
    attack = target.attacks.get()
    assert f"s_I = {attack.score:.4f}" in beta.locator(f"#target-{target.pk}").inner_text()
    assert "etable #1 received" in beta.locator(f"#result-ps-{target.pk}").inner_text()
    # a rejected attack: its error box reads as a sentence, even on a phone (checked below)
    row.get_by_label("Kind", exact=True).select_option("etable")
    bad_etable = tmp_path / "etable_bad.csv"
    bad_etable.write_text("user_id\n" + "".join(f"{u}\n" for u in range(1, contest.users_per_set)) + "0\n")
    row.locator("input[type=file]").set_input_files(str(bad_etable))
    row.get_by_role("button", name=re.compile("Upload")).click()
    beta.locator(f"#target-{target.pk} .issues li").first.wait_for(timeout=120_000)
    assert beta.locator(f"#ps-{target.pk} .issues").count() == 1  # the refusal once (was in the row and the box)
    assert "etables left" in beta.content() and beta.locator(f"#target-{target.pk} td.num").first.inner_text() == "1"
    shot(beta, "team-attack-scored")
    wait_for_jobs(contest, timeout=120)

    # a second round, not played yet: its tabs and an honest "not played yet" on the plots
    from datetime import timedelta

    from django.utils import timezone

    from contest.services.setup import add_round
    later = timezone.now() + timedelta(days=30)
    add_round(contest, name="Round two", weight=1.0, ref_days=2, org_days=2,
              phases={"anonymization": (later, later + timedelta(days=1)),
                      "attack": (later + timedelta(days=1), later + timedelta(days=2))})
    org.goto(f"{base}/console/web/")
    org.once("dialog", lambda d: d.accept())  # the attack phase closes first: publishing waits for it
    org.get_by_role("button", name=re.compile(r"Close now\s+attack")).click()
    org.wait_for_load_state()
    wait_for_jobs(contest, kinds=["compute_results"], timeout=120)
    org.goto(f"{base}/console/web/")
    org.once("dialog", lambda d: d.accept())
    org.get_by_role("button", name="Publish results").click()
    org.wait_for_load_state()
    wait_for_jobs(contest, kinds=["compute_results"], timeout=120)
    org.goto(f"{base}/console/web/jobs/")
    shot(org, "console-jobs")

    # ---- public: no login; the published leaderboard shows the result
    pub_ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pub = pub_ctx.new_page()
    pub.goto(f"{base}/")
    shot(pub, "public-home")
    pub.goto(f"{base}/c/web/")
    shot(pub, "public-contest")
    pub.goto(f"{base}/c/web/rules/")
    shot(pub, "public-rules")
    pub.goto(f"{base}/c/web/leaderboard/")
    board = pub.locator("#leaderboard")
    board.wait_for()
    assert "Alpha" in board.inner_text() and "Beta" in board.inner_text()
    assert "Preview" not in pub.content()
    contest.refresh_from_db()
    snap = contest.snapshots.filter(published=True).get()
    total = {r["team"]: r for r in snap.data["team_rounds"]}[1]["overall"]
    assert f"{total:.4f}" in board.inner_text()
    # sorting by a column header (keyboard-reachable button) reorders the rows
    pub.locator("#leaderboard th", has_text="Team").get_by_role("button").click()
    assert pub.locator("#leaderboard th[aria-sort]").count() == 1
    assert_labelled(pub)
    shot(pub, "public-leaderboard")
    readme_shot(pub, "leaderboard")
    pub.goto(f"{base}/c/web/attack-matrix/")
    pub.locator("figure[data-chart=heatmap] svg").first.wait_for()
    shot(pub, "public-attack-matrix")
    readme_shot(pub, "attack-matrix")
    pub.goto(f"{base}/c/web/awards/")
    shot(pub, "public-awards")
    pub.goto(f"{base}/c/web/plots/")
    pub.locator("figure[data-chart=scatter] svg").first.wait_for()
    shot(pub, "public-plots")

    # the language switcher in the header (a plain form): Japanese pages
    pub.goto(f"{base}/c/web/leaderboard/")
    pub.get_by_label("Language").select_option("ja")
    pub.get_by_role("button", name="Switch").click()
    pub.wait_for_load_state()
    assert pub.locator("html").get_attribute("lang") == "ja"
    assert "リーダーボード" in pub.locator("h1").inner_text()
    shot(pub, "public-leaderboard-ja")

    # keyboard: the skip link is the first stop and moves focus to the main content
    pub.keyboard.press("Tab")
    assert pub.evaluate("document.activeElement.className") == "skip-link"

    # a phone-sized viewport: no horizontal scrolling of the page itself
    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    ph = phone.new_page()
    ph.goto(f"{base}/c/web/leaderboard/")
    overflow = ph.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, f"page scrolls sideways on a phone by {overflow}px"
    shot(ph, "phone-leaderboard")
    ph_team = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    tp = ph_team.new_page()
    login(tp, base, "beta1", "pw")
    tp.goto(f"{base}/c/web/team/")
    overflow = tp.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    wide = tp.evaluate("""() => Array.from(document.querySelectorAll('body *'))
      .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1
                   && !e.closest('.table-scroll'))
      .slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))""")
    assert overflow <= 1, f"the team dashboard scrolls sideways on a phone by {overflow}px: {wide}"
    shot(tp, "phone-team-dashboard")
    ph_team.close()
    # a signed-in user without a team gets a way to join one, not a bare "Not allowed"
    User.objects.create_user("loner", password="loner-pass")
    loner_ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    loner = loner_ctx.new_page()
    login(loner, base, "loner", "loner-pass", lands_on="/join/")
    loner.goto(f"{base}/c/web/team/")
    assert loner.get_by_role("link", name="Join a team with its invitation code").count() == 1
    assert "Not allowed" not in loner.inner_text("main")
    loner_ctx.close()
    tour(browser, base, shot, rejected_pk=rejected.pk, target_pk=target.pk)
    for c in (ctx, team_ctx, pub_ctx, phone):
        c.close()
    assert not Job.objects.filter(contest=contest, status=Job.FAILED).exists()



# ------------------------------------------------------------------ the pages at 1280 / 390 px, English / Japanese
PUBLIC = ["/c/web/", "/c/web/rules/", "/c/web/leaderboard/", "/c/web/leaderboard/?round=total", "/c/web/attack-matrix/",
          "/c/web/awards/", "/c/web/plots/", "/c/web/plots/?round=2", "/c/web/analyses/", "/"]
SHOTS = {"/c/web/": "contest", "/c/web/leaderboard/": "leaderboard", "/c/web/attack-matrix/": "attack-matrix",
         "/c/web/plots/": "plots", "/c/web/team/": "team", "/console/web/": "console"}


def tour(browser, base, shot, *, rejected_pk, target_pk):
    """Every main page at 1280 and 390 px, in English and Japanese: screenshots of the main ones, no
    sideways scrolling (at 1280 px not even inside tables), no text wider than its box, charts that fill
    their column with readable labels, and the Japanese interface in Japanese down to validator messages."""
    for width in (1280, 390):
        phone = width == 390
        contexts = []

        def context(user=None, password=None, width=width, phone=phone, contexts=contexts):
            c = browser.new_context(viewport={"width": width, "height": 900 if not phone else 844},
                                    is_mobile=phone, has_touch=phone)
            contexts.append(c)
            p = c.new_page()
            if user:
                p.goto(f"{base}/login/")
                p.locator("#id_username").fill(user)
                p.locator("#id_password").fill(password)
                p.locator("main form button[type=submit]").click()
                p.wait_for_load_state()
            return p

        # One signed-in context per person and screen serves both languages (the language is the cookie's):
        # a new context and a sign-in cost Chromium about a CPU-second, the views' page loads 0.1 s each.
        pub, team, org = context(), context("beta1", "pw"), context("organizer", PASSWORD)
        alpha = context("alpha1", "pw")
        for lang in ("en", "ja"):
            for c in contexts:
                c.add_cookies([{"name": "django_language", "value": lang, "url": base}])
            _tour_view(base, shot, width, lang, (pub, team, org, alpha), rejected_pk=rejected_pk, target_pk=target_pk)
        for c in contexts:
            c.close()


def _tour_view(base, shot, width, lang, pages_of, *, rejected_pk, target_pk):
    """One view of :func:`tour`: ``pages_of`` the visitor's, a team member's (beta1), the organizer's and
    alpha1's page, each in its own context at ``width``, whose cookie says ``lang``."""
    phone = width == 390
    pub, team, org, alpha = pages_of
    where = f"{width}px {lang}"
    pages = [(pub, u) for u in PUBLIC] + [(team, "/c/web/team/"), (alpha, f"/c/web/team/uploads/{rejected_pk}/"),
                                          (org, "/console/web/"), (org, "/console/web/jobs/")]
    for p, url in pages:
        p.goto(base + url)
        p.wait_for_load_state("load")
        assert p.locator("html").get_attribute("lang") == lang, (url, where)
        problems = overflow_problems(p, strict=not phone)
        assert not problems, f"{url} at {where}: {problems}"
        problems = chart_problems(p)
        assert not problems, f"{url} at {where}: {problems}"
        if url in SHOTS:
            shot(p, f"{SHOTS[url]}-{width}-{lang}")
    # the header leaves room for the page on a phone; the Overall column is on screen
    if phone:
        pub.goto(f"{base}/c/web/leaderboard/")
        header = pub.locator(".site-header").bounding_box()["height"]
        assert header < 844 / 6, f"the header takes {header}px of an 844px phone screen ({lang})"
        # the rows are cards on a phone: every team's Overall value is on screen
        for cell in pub.locator("#leaderboard tbody tr td:nth-child(3)").all():
            overall = cell.bounding_box()
            assert overall["x"] + overall["width"] <= width, f"the Overall value is off-screen ({lang})"
        # attack error boxes read as sentences, not one word per line (round 1: its attack phase is
        # closed now, so the dashboard opens on round two's coming phase)
        team.goto(f"{base}/c/web/team/?round=1")
        heights = team.locator(f"#target-{target_pk} .issues li").evaluate_all(
            "els => els.map(e => e.getBoundingClientRect().height)")
        assert heights and max(heights) < 120, f"attack error rows {heights} px tall at {where}"
    # the attack matrix shows the minimum row its caption promises
    pub.goto(f"{base}/c/web/attack-matrix/")
    assert pub.locator("figure[data-chart=heatmap] svg").first.locator("text", has_text=(
        "Minimum" if lang == "en" else "最小")).count() == 1
    # a round not played yet says so instead of drawing empty axes
    pub.goto(f"{base}/c/web/plots/?round=2")
    assert pub.locator(".chart-empty").first.is_visible() and "R = —" not in pub.inner_text("main")
    # the team page has round tabs like the public pages
    assert team.goto(f"{base}/c/web/team/") and team.locator("main nav a[href='?round=2']").count() == 1
    if lang == "ja":
        # validator messages in the page's language: the rejected upload of the flow
        alpha.goto(f"{base}/c/web/team/uploads/{rejected_pk}/")
        text = alpha.inner_text("main")
        assert "領域 ID 99999 は 1..1024 の範囲外です" in text, text
