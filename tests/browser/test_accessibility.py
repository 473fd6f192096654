"""Accessibility: every kind of page passes axe-core's WCAG 2.1 A and AA rules at both widths and in both
languages (1280 px in English, 390 px in Japanese: :data:`AXE_VIEWS`) with no serious or critical
violation, the heatmaps' numbers read against their cells (axe does not look inside SVG) and have a table
beside them, and a keyboard-only walk (Tab, Enter and Space) uploads two sets, chooses the older as final,
uploads an attack and publishes the results, with a visible focus ring on every stop. On a phone the team
page folds each privacy preview's long parts and the console's checksums wrap.

axe-core comes with the ``axe-playwright-python`` wheel (requirements-dev.txt), which ships
``axe.min.js``. The script is evaluated in the page through the DevTools protocol, which the page's
Content-Security-Policy does not govern, so the pages keep their policy while axe looks at them.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser.layout import overflow_problems
from tests.browser.test_every_page_policy import EACH_ONCE, _context, _login

pytestmark = [pytest.mark.browser]

#: The rule sets of WCAG 2.0 and 2.1, levels A and AA.
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

#: The views axe looks at: each width and each language once (test_every_page_policy's EACH_ONCE, which says
#: why; the other two views are walked by the policy and layout sweeps). Axe over all four views was the
#: suite's costliest test in Chromium: 0.3 s of CPU a page.
AXE_VIEWS = EACH_ONCE


def axe_script() -> str:
    from axe_playwright_python.base import AXE_FILE_PATH
    return AXE_FILE_PATH.read_text(encoding="utf-8")


def axe_problems(page, script: str) -> list[str]:
    """The serious and critical WCAG 2.1 A/AA violations axe finds on ``page``, one line per element."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(script)
    result = page.evaluate("""(tags) => axe.run(document, {runOnly: {type: 'tag', values: tags},
                                                           resultTypes: ['violations']})
                                .then(r => r.violations.filter(v => ['serious', 'critical'].includes(v.impact))
                                  .map(v => ({id: v.id, nodes: v.nodes.slice(0, 4).map(
                                     n => n.target.join(' ') + ': ' + (n.failureSummary || '').split('\\n').slice(1, 2).join('')),
                                     count: v.nodes.length})))""", WCAG_TAGS)
    return [f"{v['id']} ({v['count']}): " + " | ".join(v["nodes"]) for v in result]


#: Heatmap numbers whose contrast with their cell is below AA (4.5:1), and heatmaps without a table.
HEATMAP_CONTRAST_JS = """() => {
  const lum = css => {
    const [r, g, b] = css.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number).map(c => c / 255)
      .map(c => c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const out = [];
  let numbers = 0;
  for (const fig of document.querySelectorAll('figure[data-chart=heatmap]')) {
    const svg = fig.querySelector('svg');
    const cells = Array.from(svg.querySelectorAll('rect')).filter(r => r.querySelector('title'));
    for (const t of svg.querySelectorAll('text')) {
      if (!/^\\d\\.\\d\\d$/.test(t.textContent)) continue;
      const box = t.getBoundingClientRect();
      const x = box.left + box.width / 2, y = box.top + box.height / 2;
      const cell = cells.find(r => { const b = r.getBoundingClientRect();
                                     return x >= b.left && x <= b.right && y >= b.top && y <= b.bottom; });
      if (!cell) continue;
      numbers += 1;
      const [a, b] = [lum(getComputedStyle(t).fill), lum(getComputedStyle(cell).fill)].sort((p, q) => q - p);
      const ratio = (a + 0.05) / (b + 0.05);
      if (ratio < 4.5) out.push(`${t.textContent} on ${getComputedStyle(cell).fill}: ${ratio.toFixed(2)}:1`);
    }
    const table = fig.parentElement.querySelector('table');
    if (!table) out.push(`a heatmap without a table: ${fig.getAttribute('data-src')}`);
  }
  return {numbers, problems: out.slice(0, 8)};
}"""


@pytest.fixture
def demo_site(live_server, settings, demo_contest):
    """The demo contest (round 1 published, round 2 open) and the failing /boom/ route of the 500 page."""
    settings.ROOT_URLCONF = "tests.browser.urls_with_error"
    return live_server.url, demo_contest


def test_every_page_kind_passes_axe(demo_site, browser, shot):
    from contest.models import AnonymizedSet, Dataset, Job
    base, contest = demo_site
    script = axe_script()
    aset = AnonymizedSet.objects.filter(dataset__round__number=1, dataset__team__number=1).order_by("pk").first()
    ds = Dataset.objects.get(round__number=1, round__contest=contest, kind=Dataset.TEAM, number=1, challenge=1)
    job = Job.objects.filter(contest=contest).order_by("pk").first()
    public = ["/", "/c/demo/", "/c/demo/rules/", "/c/demo/leaderboard/", "/c/demo/leaderboard/?round=total",
              "/c/demo/attack-matrix/", "/c/demo/awards/", "/c/demo/plots/", "/c/demo/analyses/", "/login/",
              "/signup/", "/password-reset/", "/no-such-page/", "/boom/", "/api/docs/"]
    team = ["/c/demo/team/", "/c/demo/team/?round=1", f"/c/demo/team/uploads/{aset.pk}/",
            f"/c/demo/team/datasets/{ds.pk}/map/", f"/c/demo/teams/{ds.team_id}/", "/account/",
            "/account/password/", "/token/", "/console/demo/"]
    console = ["/console/", "/console/demo/", "/console/demo/jobs/", f"/console/demo/jobs/{job.pk}/"]
    found = []
    for width, lang in AXE_VIEWS:
        ctx = _context(browser, base, width, lang)
        page = ctx.new_page()
        for who, urls in ((None, public), (("alice", "alice-demo"), team), (("organizer", "organizer-demo"), console)):
            if who:
                ctx.clear_cookies()
                ctx.add_cookies([{"name": "django_language", "value": lang, "url": base}])
                _login(page, base, *who)
            for url in urls:
                page.goto(base + url)
                page.wait_for_load_state("load")
                if url == "/api/docs/":
                    page.locator("#swagger-ui .opblock").first.wait_for()
                for problem in axe_problems(page, script):
                    found.append(f"{url} {width} {lang}: {problem}")
                if url == "/c/demo/attack-matrix/":
                    heat = page.evaluate(HEATMAP_CONTRAST_JS)
                    assert heat["numbers"] >= 10, heat
                    found += [f"{url} {width} {lang}: {p}" for p in heat["problems"]]
                if url in ("/c/demo/attack-matrix/", "/c/demo/plots/"):
                    # every chart has its numbers as a table in its section too
                    bare = page.evaluate("""() => Array.from(document.querySelectorAll('figure[data-chart]'))
                      .filter(f => !f.closest('section, main').querySelector('table')).map(f => f.dataset.src)""")
                    found += [f"{url} {width} {lang}: chart {src} has no table" for src in bare]
        ctx.close()
    assert not found, "\n".join(found)


def test_team_page_and_console_on_a_phone(demo_site, browser, shot):
    """390 px: the privacy preview's score table fits its card, the preview's per-user table and leak map are
    folded (the maps drawn at the card's width when opened), each upload history shows the newest upload and
    folds the earlier ones (a checkbox the keyboard ticks shows them; 1280 px shows them all), the team page
    stays short, and the console's checksum of a training file wraps."""
    from django.contrib.auth import get_user_model

    from contest.models import Dataset
    base, contest = demo_site
    alice = get_user_model().objects.get(username="alice")
    _upload_with_previews(contest, alice, seeds=(1, 2, 3))
    rnd = contest.rounds.get(number=2)
    rnd.training_data = Dataset.objects.filter(round=rnd).first().original
    rnd.training_kind = "traces"
    rnd.save()
    for lang in ("en", "ja"):
        ctx = _context(browser, base, 390, lang)
        page = ctx.new_page()
        _login(page, base, "alice", "alice-demo")
        page.goto(f"{base}/c/demo/team/")
        previews = page.locator(".privacy-preview")
        assert previews.count() == 2
        for table in page.locator("table.preview-attacks").all():
            wide = table.evaluate("t => t.scrollWidth - t.parentNode.clientWidth")
            assert wide <= 1, f"the preview's score table is {wide}px wider than its card ({lang})"
        # each preview folds its explanation, per-user table, leak map and command line
        assert page.locator("details.preview-part:not([open])").count() == 8
        _earlier_uploads_fold(page, lang)
        assert not overflow_problems(page, strict=False), overflow_problems(page, strict=False)
        height = page.evaluate("document.documentElement.scrollHeight")
        assert height < 6500, f"the team page is {height}px tall at 390 px ({lang})"
        shot(page, f"phone-team-previews-{lang}")
        fold = page.locator("details.preview-maps-part").first
        fold.locator("summary").click()
        svg = fold.locator("figure[data-chart=gridmap] svg").first
        svg.wait_for()
        assert svg.bounding_box()["width"] <= fold.bounding_box()["width"] + 1
        assert not overflow_problems(page, strict=False), overflow_problems(page, strict=False)
        ctx.clear_cookies()
        ctx.add_cookies([{"name": "django_language", "value": lang, "url": base}])
        _login(page, base, "organizer", "organizer-demo")
        page.goto(f"{base}/console/demo/")
        assert page.locator("p.training code").count() == 1
        assert not overflow_problems(page, strict=False), overflow_problems(page, strict=False)
        ctx.close()


def _earlier_uploads_fold(page, lang: str) -> None:
    """Each history of three uploads shows only the newest (the default final set) on a phone; the checkbox
    'Show all 3 uploads', reached by Tab and ticked by Space, shows the three and folds them again; at
    1280 px the three rows show and the checkbox does not."""
    label = {"en": "Show all 3 uploads", "ja": "3 件のアップロードをすべて表示"}[lang]
    histories = page.locator("table[id^=history-ds]").all()
    assert len(histories) == 2
    for table in histories:
        assert table.locator("tbody tr").count() == 3
        assert table.locator("tbody tr:visible").count() == 1, f"earlier uploads not folded ({lang})"
        assert table.locator("tbody tr.is-final").is_visible()
    box = page.get_by_role("checkbox", name=label).first
    _tab_to(page, f"#{box.get_attribute('id')}")
    page.keyboard.press("Space")
    assert histories[0].locator("tbody tr:visible").count() == 3
    assert histories[1].locator("tbody tr:visible").count() == 1              # each history folds on its own
    page.keyboard.press("Space")
    assert histories[0].locator("tbody tr:visible").count() == 1
    page.set_viewport_size({"width": 1280, "height": 900})
    assert all(t.locator("tbody tr:visible").count() == 3 for t in histories) and not box.is_visible()
    page.set_viewport_size({"width": 390, "height": 844})


def _upload_with_previews(contest, user, seeds=(1, 2)):
    """Alice's uploads to round 2 (open in the demo), scored and previewed inline (eager jobs)."""
    from contest.celery import app
    from contest.models import Dataset
    from contest.services import uploads
    from tests.contest.conftest import anonymize_csv
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        for ds in Dataset.objects.filter(round__contest=contest, round__number=2, kind=Dataset.TEAM, number=1):
            for seed in seeds:
                uploads.submit_anonymized_set(user=user, dataset=ds, name=f"anotraces_{seed}.csv", content=anonymize_csv(
                    ds, "A2-MRLH", seed=seed, mu_x=1, mu_y=1, **{"lambda": 0.1}))
    finally:
        app.conf.task_always_eager = eager


#: The focused element and whether its focus shows: an outline at least 2 px wide, or a box shadow.
FOCUS_JS = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const cs = getComputedStyle(el);
  const ring = (cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 2) || cs.boxShadow !== 'none';
  const text = (el.textContent || el.name || '').trim().slice(0, 30);
  const name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + text;
  return {ring, name};
}"""


def _tab_to(page, selector: str, limit: int = 200) -> None:
    """Press Tab until the element matching ``selector`` has the focus; every stop on the way shows a focus ring."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        focus = page.evaluate(FOCUS_JS)
        if focus is not None:
            assert focus["ring"], f"no visible focus on {focus['name']} ({page.url})"
        if page.evaluate("s => document.activeElement && document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"{selector} not reached with Tab on {page.url}")


def _choose_file(page, selector: str, path) -> None:
    """Tab to a file input and open its chooser with Space."""
    _tab_to(page, selector)
    # Chromium now and then lets a Space on a file input pass without a chooser (seen once in ten runs
    # while the machine was busy): press it again, as a person would.
    for attempt in range(3):
        try:
            with page.expect_file_chooser(timeout=8_000) as chooser:
                page.keyboard.press("Space")
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    chooser.value.set_files(str(path))


def _keyboard_login(page, base, username, password) -> None:
    page.goto(f"{base}/login/")
    _tab_to(page, "#id_username")
    page.keyboard.type(username)
    _tab_to(page, "#id_password")
    page.keyboard.type(password)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def test_a_keyboard_walk_plays_a_round(demo_site, browser, tmp_path):
    """Tab, Enter and Space only: log in, upload two sets, choose the first as final, upload an attack, and
    as the organizer close the attack phase and publish the results; each focus stop shows its ring."""
    from django.core.cache import cache

    from contest.celery import app
    from contest.models import AnonymizedSet, Dataset, Phase, PublicSet
    from tests.contest.conftest import anonymize_csv, move_phase
    base, contest = demo_site
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True  # jobs run inline in the server: no worker process for this walk
    try:
        ctx = _context(browser, base, 1280, "en")
        page = ctx.new_page()
        page.on("dialog", lambda d: d.accept())  # the confirmations (a native dialog: Enter accepts it)
        _keyboard_login(page, base, "alice", "alice-demo")
        # two uploads to round 2's first challenge, by the file chooser and the Upload button
        ds = Dataset.objects.get(round__contest=contest, round__number=2, kind=Dataset.TEAM, number=1, challenge=1)
        page.goto(f"{base}/c/demo/team/")
        for seed in (1, 2):
            path = tmp_path / f"anotraces_{seed}.csv"
            path.write_bytes(anonymize_csv(ds, "A2-MRLH", seed=seed, mu_x=1, mu_y=1, **{"lambda": 0.1}))
            _choose_file(page, f"#ds-{ds.pk} input[type=file]", path)
            _tab_to(page, f"#ds-{ds.pk} button[type=submit]")
            page.keyboard.press("Enter")
            page.locator(f"#history-ds-{ds.pk} tr", has_text=f"#{seed}").locator(".badge", has_text="valid").wait_for(
                timeout=60_000)
        # the first upload chosen as the final set
        page.goto(f"{base}/c/demo/team/")
        _tab_to(page, f"#history-ds-{ds.pk} button[type=submit]")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert AnonymizedSet.objects.get(dataset=ds, seq=1).selected
        # round 1's attack phase open again: an etable against Beta's first set
        rnd = contest.rounds.get(number=1)
        move_phase(rnd, Phase.ATTACK, -1, 24)
        Phase.objects.filter(round=rnd, kind=Phase.ATTACK).update(closed_at=None)
        cache.clear()
        target = PublicSet.objects.get(dataset__round=rnd, dataset__kind=Dataset.TEAM, dataset__number=2,
                                       dataset__challenge=1)
        before = target.attacks.count()
        etable = tmp_path / "etable.csv"
        etable.write_text("user_id\n" + "".join(f"{u}\n" for u in range(1, contest.users_per_set + 1)))
        page.goto(f"{base}/c/demo/team/?round=1")
        assert page.locator(f"#ps-{target.pk} select").input_value() == "etable"
        _choose_file(page, f"#ps-{target.pk} input[type=file]", etable)
        _tab_to(page, f"#ps-{target.pk} button[type=submit]")
        page.keyboard.press("Enter")
        # the box under the form says it arrived; the target's row follows it until scored (newest first)
        page.locator(f"#result-ps-{target.pk} .attack-received").wait_for(timeout=60_000)
        page.locator(f"#target-{target.pk} .attack-item").first.locator(".badge", has_text="scored").wait_for(
            timeout=60_000)
        assert target.attacks.count() == before + 1
        # the organizer closes the attack phase and publishes
        ctx.clear_cookies()
        _keyboard_login(page, base, "organizer", "organizer-demo")
        page.goto(f"{base}/console/demo/")
        attack = Phase.objects.get(round=rnd, kind=Phase.ATTACK)
        _tab_to(page, f"form[action$='/phases/{attack.pk}/close/'] button")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        published = contest.snapshots.filter(published=True).count()
        page.goto(f"{base}/console/demo/")
        _tab_to(page, "form.publish-form button[type=submit]")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert contest.snapshots.filter(published=True).count() > published
        ctx.close()
    finally:
        app.conf.task_always_eager = eager
