"""The "Utility analyses" page: embargoed like every results page, then shows the stored rules §13 figures."""
from __future__ import annotations

import re

import pytest

from contest.services import results
from tests.contest.test_analyses import closed_small  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def _table(html: str, table_id: str) -> str:
    return re.search(rf'<table[^>]* id="{table_id}">(.*?)</table>', html, re.S).group(1)


def test_analyses_page_is_embargoed_then_shows_the_stored_figures(closed_small, client, client_for):
    contest = closed_small
    url = f"/c/{contest.slug}/analyses/"
    snap = results.snapshot(contest)  # computed, not published
    for viewer in (client, client_for("alpha1")):
        html = viewer.get(url).content.decode()
        assert "embargoed" in html and "TP-TV-Top50" not in html
    preview = client_for("judge").get(url).content.decode()
    assert "Preview:" in preview and "TP-TV-Top50" in preview

    results.publish_results(contest)
    r = client.get(url)
    assert r.status_code == 200
    html = r.content.decode()
    assert "Preview:" not in html and 'href="/c/tc/analyses/" aria-current="page"' in html
    stored = snap.data["analyses"]["rounds"]["1"]
    for ch, short in ((1, "idp"), (2, "trp")):
        table = _table(html, f"analyses-{short}")
        rows = [u for u in stored["utility"] if u["challenge"] == ch]
        assert rows
        for u in rows:
            for k in ("tp_tv_top50", "tm_emd", "poi_accuracy"):
                assert f"{u[k]:.4f}" in table, (ch, k)
        # baseline rows: the mean over the challenge's datasets
        for key in ("reference", "uniform"):
            mean = sum(u[key]["tp_tv_top50"] for u in rows) / len(rows)
            assert f"{mean:.4f}" in table
        assert "reference traces" in table and "uniformly random" in table
        fair = _table(html, f"fairness-{short}")
        for f in (f for f in stored["fairness"] if f["challenge"] == ch):
            assert f["label"] in fair and f"{f['sd_s_i_min']:.4f}" in fair and f"{f['sd_s_t_min']:.4f}" in fair
    # the page is translated: Japanese on request, the blocktrans paragraphs included
    ja = client.get(url, HTTP_ACCEPT_LANGUAGE="ja,en;q=0.5").content.decode()
    assert "有用性の分析" in ja and "スライス型" in ja and "付録 E" in ja and "s_I,min の標準偏差" in ja
    assert "匿名化なし" in ja and "No obfuscation" not in ja  # the stored sample labels too
