"""The leaderboard shows each place's bootstrap interval and flags statistically tied places; the awards page
says how stable each award is. Both read the results snapshot only."""
from __future__ import annotations

import re

import pytest

from contest.services import results
from tests.contest.conftest import built_on_generated, upload_all_and_close

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(request):
    return built_on_generated(request, "published", _publish)


def _publish(generated, capture):
    contest = upload_all_and_close(generated, {1: ("A1-none", {}), 2: ("A3-kRR", {"eps": 8.0}),
                                               3: ("A4-PL", {})}, capture)
    snap = results.publish_results(contest)
    u = snap.data["uncertainty"]
    # one dead heat between places 1 and 2, so the page has a flag to show
    u["leaderboards"]["total"][0]["tied_next"] = True
    u["leaderboards"]["total"][1]["tied_next"] = False
    snap.save(update_fields=["data"])
    return contest, snap


def _rows(html: str, table_id: str) -> list[str]:
    table = re.search(rf'<table[^>]*id="{table_id}".*?</table>', html, re.S).group(0)
    return re.findall(r"<tr(?: [^>]*)?>\s*<td.*?</tr>", table, re.S)


def test_leaderboard_shows_intervals_and_statistical_ties(published, client, django_assert_max_num_queries):
    contest, snap = published
    with django_assert_max_num_queries(12):
        html = client.get(f"/c/{contest.slug}/leaderboard/?round=total").content.decode()
    u = snap.data["uncertainty"]["leaderboards"]["total"]
    rows = _rows(html, "leaderboard")
    assert len(rows) == len(u) and 'id="uncertainty-note"' in html
    for i, (row, unc) in enumerate(zip(rows, u, strict=True)):
        lo, hi = unc["interval"]
        assert f"[{lo:.3f}, {hi:.3f}]" in row
        flagged = unc["tied_next"] or (i > 0 and u[i - 1]["tied_next"])
        assert ("stat-tied" in row) is flagged, i
    assert "stat-tied" in rows[0] and "stat-tied" in rows[1] and "stat-tied" not in rows[2]


def test_challenge_tables_show_each_sets_interval(published, client):
    contest, snap = published
    html = client.get(f"/c/{contest.slug}/leaderboard/?round=1").content.decode()
    for s in snap.data["sets"]:
        if s["valid"] and not s.get("benchmark"):
            field = "s_i_min" if s["set"]["challenge"] == 1 else "s_t_min"
            lo, hi = snap.data["uncertainty"]["sets"][s["set"]["key"]][field]
            assert f"[{lo:.3f}, {hi:.3f}]" in html


def test_awards_say_how_stable_they_are(published, client, django_assert_max_num_queries):
    contest, snap = published
    with django_assert_max_num_queries(12):
        html = client.get(f"/c/{contest.slug}/awards/").content.decode()
    stability = snap.data["uncertainty"]["awards"]
    shown = re.findall(r'<dd class="stability">(\d+)% of the resamples', html)
    assert shown == [str(round(100 * stability[f"{a['award']}-{a['place']}"])) for a in snap.data["awards"]]
