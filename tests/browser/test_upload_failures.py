"""An upload that fails says so in its card, in the page's language, at 1280 px in English and 390 px in
Japanese (EACH_ONCE): the server's 413 message (the size cap), a file past the limit the page states
(refused before it is sent, with the figure of the rules page), a server error and a network failure.
Never a silent reset."""
from __future__ import annotations

import pytest
from django.core.cache import cache

from tests.browser.test_every_page_policy import EACH_ONCE, _context, _login
from tests.contest.conftest import contest_spec

pytestmark = [pytest.mark.browser]


@pytest.fixture
def team_site(live_server):
    from contest.models import Dataset
    from contest.services.generation import generate_round_data
    from contest.services.setup import create_contest

    contest = create_contest(contest_spec("up"))
    generate_round_data(contest.rounds.get())
    return live_server.url, contest, Dataset.objects.get(round__contest=contest, team__number=1, challenge=1)


REFUSED = {"en": "Upload refused:", "ja": "アップロードは受け付けられませんでした:"}


@pytest.mark.parametrize("width,lang", EACH_ONCE)
def test_a_failed_upload_is_shown_in_its_card(team_site, browser, settings, tmp_path, width, lang):
    base, contest, ds = team_site
    ctx = _context(browser, base, width, lang)
    page = ctx.new_page()
    _login(page, base, "alpha1", "pw")
    page.goto(f"{base}/c/up/team/")
    card, result = page.locator(f"#ds-{ds.pk}"), page.locator(f"#result-ds-{ds.pk}")
    upload = card.get_by_role("button", name="Upload" if lang == "en" else "アップロード")

    def send(name: str, size: int):
        path = tmp_path / name
        path.write_bytes(b"reg_id\n" + b"1\n" * (size // 2))
        card.locator("input[type=file]").set_input_files(str(path))
        upload.click()

    # the request cap below the contest's limit: the server's 413 message lands in the card
    settings.TRACECUP_MAX_REQUEST_BYTES = 20_000
    send("big.csv", 40_000)
    alert = result.locator(".msg-error[role=alert]")
    alert.wait_for(timeout=30_000)
    text = alert.inner_text()
    assert REFUSED[lang] in text and "19.5 KiB" in text.replace("\xa0", " ") and ".gz" in text, text  # the rule, in MiB/KiB
    assert card.locator("progress").is_hidden() and card.locator(".upload-status").inner_text() == ""
    settings.TRACECUP_MAX_REQUEST_BYTES = 200 * 1024 * 1024 + 1024 * 1024

    # a file past the contest's limit is refused at once, with the figure the rules page gives
    contest.upload_size_limit = 30_000
    contest.save(update_fields=["upload_size_limit"])
    cache.clear()  # a raw save, as the admin makes: no audit entry, so the stored dashboard would live its bucket
    rules = ctx.new_page()
    rules.goto(f"{base}/c/up/rules/")
    figure = "29.3 KiB"
    assert figure in rules.inner_text("main").replace("\xa0", " ")
    rules.close()
    page.reload()
    assert figure in card.inner_text().replace("\xa0", " ")          # the card states the same limit
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    send("too-big.csv", 40_000)
    result.locator(".msg-error", has_text=figure.replace(" ", "\xa0")).or_(
        result.locator(".msg-error", has_text=figure)).wait_for(timeout=5_000)
    page.wait_for_timeout(300)
    assert posts == [], f"the file past the stated limit was sent anyway: {posts}"
    assert "too-big.csv" in result.inner_text()

    # a server error answered by something else (a proxy's HTML page): the status is shown
    page.route("**/upload/", lambda route: route.fulfill(status=502, body="<html>Bad gateway</html>",
                                                         content_type="text/html"))
    send("small.csv", 100)
    result.locator(".msg-error", has_text="502").wait_for(timeout=10_000)
    page.unroute("**/upload/")
    # the connection is lost: a network error, said in the card
    page.route("**/upload/", lambda route: route.abort("connectionreset"))
    send("small.csv", 100)
    network = {"en": "Network error", "ja": "ネットワークエラー"}[lang]
    result.locator(".msg-error[role=alert]", has_text=network).wait_for(timeout=10_000)
    assert result.locator(".msg-error").count() == 1   # the latest failure replaces the previous one
    page.unroute("**/upload/")
    ctx.close()
