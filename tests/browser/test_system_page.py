"""The System page follows the system without a reload (the page script's poller of system/live.json, under
the site's Content-Security-Policy): a worker that starts beating appears, one that stops shows stopped; in
English at 1280 px and in Japanese at 390 px (EACH_ONCE), without sideways scrolling."""
from __future__ import annotations

import pytest
from django.utils import timezone

from tests.browser.test_every_page_policy import EACH_ONCE, _context, _login
from tests.contest.conftest import contest_spec

pytestmark = [pytest.mark.browser]


@pytest.mark.parametrize("width,lang", EACH_ONCE)
def test_the_system_page_updates_itself(live_server, browser, width, lang):
    from contest.services.setup import create_contest
    from contest.system.models import WorkerHeartbeat
    create_contest(contest_spec("sys"))
    ctx = _context(browser, live_server.url, width, lang)
    page = ctx.new_page()
    _login(page, live_server.url, "judge", "judge-pass")
    page.goto(f"{live_server.url}/system/")
    assert page.locator("h1").inner_text() == ("System" if lang == "en" else "システム")
    assert page.locator("#system-workers tr[data-worker]").count() == 0

    row = WorkerHeartbeat.objects.create(name="celery@machine-2", hostname="machine-2", queues=["judge"], pid=42,
                                         concurrency=2, rss_bytes=300 << 20)
    page.wait_for_selector('#system-workers tr[data-worker="celery@machine-2"][data-state="alive"]', timeout=15_000)
    assert "300" in page.locator('tr[data-worker="celery@machine-2"]').inner_text()
    WorkerHeartbeat.objects.filter(pk=row.pk).update(stopped_at=timezone.now())
    page.wait_for_selector('tr[data-worker="celery@machine-2"][data-state="stopped"]', timeout=15_000)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    ctx.close()
