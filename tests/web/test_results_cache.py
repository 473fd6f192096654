"""The results pages cache their rendered tables (issue 14: pages under load); the key is the
snapshot, the round, the language and the viewer's team, so a publish, a renamed team or another
viewer never sees a stale or someone else's table."""
from __future__ import annotations

import pytest

from contest.models import Team
from contest.services import results
from contest.web import views
from tests.contest.conftest import upload_all_and_close

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(generated, django_capture_on_commit_callbacks):
    contest = upload_all_and_close(generated, {1: ("A3-kRR", {"eps": 10.0}), 2: ("A3-kRR", {"eps": 8.0}),
                                               3: ("A1-none", {})}, django_capture_on_commit_callbacks)
    results.publish_results(contest)
    return contest


@pytest.fixture
def built(monkeypatch):
    """Counts the matrix cells the view builds (heat_style is called once per cell)."""
    calls = []
    real = views.heat_style
    monkeypatch.setattr(views, "heat_style", lambda v: calls.append(v) or real(v))
    return calls


def test_the_matrix_is_built_once_per_snapshot_and_rebuilt_after_a_change(published, client, built, settings):
    settings.TRACECUP_PAGE_CACHE_SECONDS = 0  # the table's own cache under test, not the whole-page one
    url = f"/c/{published.slug}/attack-matrix/"
    main = lambda html: html.split("<h1>", 1)[1]  # noqa: E731 (the header's CSRF token differs per request)
    first = main(client.get(url).content.decode())
    n = len(built)
    assert n > 0
    assert main(client.get(url).content.decode()) == first and len(built) == n  # served from the cache
    assert client.get(url, HTTP_ACCEPT_LANGUAGE="ja").status_code == 200 and len(built) == 2 * n  # per language
    Team.objects.filter(contest=published, number=1).update(name="Renamed")
    renamed = client.get(url).content.decode()
    assert len(built) == 3 * n and "Renamed" in renamed
    results.publish_results(published)  # a new snapshot: a new key
    client.get(url)
    assert len(built) == 4 * n


def test_the_leaderboard_marks_the_viewers_own_team_only(published, client, client_for):
    url = f"/c/{published.slug}/leaderboard/"
    anonymous = client.get(url).content.decode()
    alpha = client_for("alpha1").get(url).content.decode()
    beta = client_for("beta1").get(url).content.decode()
    assert 'class="is-own"' not in anonymous
    assert alpha.count('class="is-own"') >= 1 and beta.count('class="is-own"') >= 1
    own = lambda html: html.split('class="is-own"', 1)[1].split("</tr>", 1)[0]  # noqa: E731
    assert "Alpha" in own(alpha) and "Beta" in own(beta)
    assert 'class="is-own"' not in client.get(url).content.decode()  # the anonymous page after them
