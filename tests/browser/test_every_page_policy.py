"""Every kind of page the site serves passes its own Content-Security-Policy in Chromium: the public
and team pages, the organizer console, the Django admin, the API docs (Swagger UI), and the error
pages 400 (Django's bad Host), 403, 404, 413, 429 and 500. At 1280 and 390 px, in English and Japanese.
The pages of the flows that run at two views (:data:`EACH_ONCE`: sign-up, password reset, account, System)
are walked here at all four, and must not scroll sideways either.

Chromium reports each blocked script, style or request on the console; the autouse fixture of
``conftest.py`` fails the test on any. Here each page must also carry the header and show its content
(a page blank because its script was blocked would have no violation left to report only if it had
none to run, so the content is checked too).
"""
from __future__ import annotations

import pytest

from tests.browser.conftest import CSP_VIOLATIONS
from tests.browser.layout import overflow_problems
from tests.contest.conftest import contest_spec

pytestmark = [pytest.mark.browser]

ADMIN_PASSWORD = "an-admin-pass-1"
#: Every width in every language: the page sweeps (this file's policy check, test_contest_flow's tour) walk each
#: kind of page in all four.
VIEWS = [(1280, "en"), (390, "en"), (1280, "ja"), (390, "ja")]
#: Each width and each language once, for the flows and axe: what they check depends on the width (the phone's
#: menu, cards in place of tables) and on the language (translated labels, names and messages), not on the two
#: together, and their pages are in the sweeps at the other two views. A flow at all four views cost about
#: 3 CPU-seconds of Chromium and the live server per view.
EACH_ONCE = [(1280, "en"), (390, "ja")]


@pytest.fixture
def site(live_server, settings):
    """A contest with data (no worker needed), a superuser, and the failing /boom/ route."""
    from django.contrib.auth import get_user_model

    from contest.services.generation import generate_round_data
    from contest.services.setup import create_contest

    settings.ROOT_URLCONF = "tests.browser.urls_with_error"
    contest = create_contest(contest_spec("csp"))
    generate_round_data(contest.rounds.get())
    get_user_model().objects.create_superuser("admin", "admin@example.org", ADMIN_PASSWORD)
    return live_server.url


def _context(browser, base, width, lang, **extra):
    phone = width == 390
    ctx = browser.new_context(viewport={"width": width, "height": 844 if phone else 900}, is_mobile=phone,
                              has_touch=phone, **extra)
    ctx.add_cookies([{"name": "django_language", "value": lang, "url": base}])
    return ctx


def _login(page, base, username, password):
    page.goto(f"{base}/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(password)
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()


def _visit(page, url, status, shows):
    """Open ``url``: the answer has ``status`` and the policy header, and the page shows ``shows``."""
    response = page.goto(url)
    page.wait_for_load_state("load")
    assert response.status == status, (url, response.status)
    policy = response.headers.get("content-security-policy", "")
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("style-src-attr")[0], (url, policy)
    page.locator(shows).first.wait_for(timeout=15_000)


def _visit_flow_page(page, url):
    """:func:`_visit` to a flow's page (200, its heading) that must also fit the screen's width."""
    _visit(page, url, 200, "main h1")
    strict = page.viewport_size["width"] > 390
    assert not overflow_problems(page, strict=strict), (url, overflow_problems(page, strict=strict))


@pytest.mark.parametrize("width,lang", VIEWS)
def test_every_page_kind_passes_the_sites_policy(site, browser, settings, width, lang):
    base = site
    ctx = _context(browser, base, width, lang)
    page = ctx.new_page()
    # a visitor: public pages, 404, the 500 page, the API docs (Swagger UI draws the API's operations)
    _visit(page, f"{base}/", 200, "main h1")
    _visit(page, f"{base}/c/csp/rules/", 200, "main h1")
    _visit(page, f"{base}/no-such-page/", 404, "main h1")
    _visit(page, f"{base}/boom/", 500, "main h1")
    _visit(page, f"{base}/api/docs/", 200, "#swagger-ui .opblock")
    assert "TraceCup API" in page.locator("#swagger-ui .info").inner_text()
    _visit_flow_page(page, f"{base}/signup/")                         # the accounts flows' pages (EACH_ONCE)
    _visit_flow_page(page, f"{base}/password-reset/")
    # 429: the login locked after AXES_FAILURE_LIMIT wrong passwords (one here: the count is
    # tests/web/test_accounts_and_teams.py's, this test's the page)
    settings.AXES_FAILURE_LIMIT = 1
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        page.goto(f"{base}/login/")
        page.locator("#id_username").fill(f"nobody-{width}-{lang}")
        page.locator("#id_password").fill(f"wrong-{attempt}")
        with page.expect_response(lambda r: r.request.method == "POST") as answer:
            page.locator("main form button[type=submit]").click()
    assert answer.value.status == 429 and answer.value.headers.get("content-security-policy")
    page.locator("main h1").wait_for()
    # a team member: the team page, then 403 on the console of the contest
    _login(page, base, "alpha1", "pw")
    _visit(page, f"{base}/c/csp/team/", 200, "main h1")
    _visit_flow_page(page, f"{base}/account/")
    _visit(page, f"{base}/console/csp/", 403, "main h1")
    # 413: a plain form post past the request cap (no page script involved), answered by the site's page
    settings.TRACECUP_MAX_REQUEST_BYTES = 4096
    page.goto(f"{base}/c/csp/team/")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.evaluate("""() => {
          const form = document.querySelector('form[data-upload]');
          form.removeAttribute('data-upload');                      // a browser without the page script
          const f = new DataTransfer();
          f.items.add(new File(['0'.repeat(8192)], 'big.csv', {type: 'text/csv'}));
          form.querySelector('input[type=file]').files = f.files;
          HTMLFormElement.prototype.submit.call(form);
        }""")
    assert answer.value.status == 413 and answer.value.headers.get("content-security-policy")
    page.locator("main .msg-error").wait_for()
    assert "4 KiB" in page.inner_text("main").replace("\xa0", " ")  # the size rule's one unit (contest.upload_rule)
    settings.TRACECUP_MAX_REQUEST_BYTES = 200 * 1024 * 1024 + 1024 * 1024
    # the organizer: console, Django admin (index, a list, a change form)
    ctx.clear_cookies()
    ctx.add_cookies([{"name": "django_language", "value": lang, "url": base}])
    _login(page, base, "admin", ADMIN_PASSWORD)
    _visit(page, f"{base}/console/", 200, "main h1")
    _visit(page, f"{base}/console/csp/", 200, "main h1")
    _visit_flow_page(page, f"{base}/system/")                         # test_system_page's (EACH_ONCE)
    _visit(page, f"{base}/admin/", 200, "#content h1")
    _visit(page, f"{base}/admin/contest/contest/", 200, "#result_list")
    page.locator("#result_list a").first.click()
    page.locator("#content form").wait_for()
    ctx.close()
    assert not CSP_VIOLATIONS


def test_a_bad_host_gets_the_sites_400_page_under_the_policy(site, browser, chromium_path):
    """Django's 400 for a Host it does not serve: reached under a name that resolves to this server."""
    port = site.rsplit(":", 1)[1]
    b = browser.browser_type.launch(executable_path=chromium_path, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                          "--no-first-run", "--host-resolver-rules=MAP bad-host.test 127.0.0.1"])
    try:
        page = b.new_page()
        violations = []
        page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
        response = page.goto(f"http://bad-host.test:{port}/")
        assert response.status == 400
        assert "script-src 'self'" in response.headers.get("content-security-policy", "")
        assert page.locator("main h1").inner_text() == "Bad request"
    finally:
        b.close()
    assert not violations, violations
