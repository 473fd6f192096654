"""The privacy preview on the team page and in the API: shown live, side by side, own team and organizers only."""
from __future__ import annotations

import json
import re

import pytest

import scoring
from contest.models import AnonymizedSet, Dataset, PrivacyPreview
from contest.services import storage, uploads
from scoring.preview import prediction_interval
from tests.contest.conftest import anonymize_csv, built_on_generated, user

pytestmark = pytest.mark.django_db


def _upload(contest, capture, algorithm, seed, **params) -> AnonymizedSet:
    ds = Dataset.objects.get(round__contest=contest, number=1, challenge=1)
    with capture(execute=True):
        aset = uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, name="a.csv",
                                             content=anonymize_csv(ds, algorithm, seed=seed, **params))
    return AnonymizedSet.objects.get(pk=aset.pk)


@pytest.fixture
def two_previews(request):
    def upload_two(generated, capture):
        first = _upload(generated, capture, "A1-none", 1)
        second = _upload(generated, capture, "A3-kRR", 2, eps=8.0)
        assert first.status == second.status == AnonymizedSet.VALID
        return generated, first, second
    return built_on_generated(request, "two_previews", upload_two)


def test_team_card_compares_uploads_and_shows_the_newest_preview(two_previews, client_for,
                                                                 django_assert_max_num_queries):
    contest, first, second = two_previews
    ds = first.dataset
    alpha = client_for("alpha1")
    with django_assert_max_num_queries(20):
        state = alpha.get(f"/c/{contest.slug}/team/datasets/{ds.pk}/state.json").json()
    html = state["html"]
    assert state["finished"] is True
    assert "preview: the judge's sample attacks only; other teams' attacks come later" in html
    # side by side: each upload's row has its s_U and its preview's s_I,min and s_T,min
    for aset in (first, second):
        s = PrivacyPreview.objects.get(anonymized_set=aset).summary
        row = re.search(rf'>#{aset.seq}</a>.*?</tr>', html, re.S).group(0)
        cells = re.findall(r'<td class="num">([^<]*)</td>', row)
        assert cells == [f"{aset.s_u:.4f}", f"{s['s_i_min']:.4f}", f"{s['s_t_min']:.4f}"]
    # the newest preview in detail: attacks, riskiest users, CSV, leak map, the command and version
    p = PrivacyPreview.objects.get(anonymized_set=second)
    assert f"Privacy preview of upload #{second.seq}" in html
    for a in p.summary["attacks"]:
        assert f"<th scope=\"row\">{a['name']}</th>" in html
    top = p.summary["top_users"][0]
    assert f'<th scope="row">{top[0]}</th>' in html
    assert f"/files/{p.per_user_id}/" in html
    spec = json.loads(re.search(rf'<script id="leak-home-{second.pk}" type="application/json">(.*?)</script>',
                                html, re.S).group(1))
    assert len(spec["values"]) == contest.grid_nx * contest.grid_ny
    assert sum(spec["values"]) == pytest.approx(1.0 if p.leak_map["users"] else 0.0)
    assert f"--seed {p.seed}" in html and f"scoring {scoring.__version__}" in html and "pip install ." in html


def test_dashboard_shows_the_preview_with_pinned_queries(two_previews, client_for, django_assert_max_num_queries):
    contest, _, second = two_previews
    alpha = client_for("alpha1")
    with django_assert_max_num_queries(30):  # test_dashboard_queries.MAX_QUERIES: a preview adds none per upload
        page = alpha.get(f"/c/{contest.slug}/team/").content.decode()
    assert f"Privacy preview of upload #{second.seq}" in page


def test_per_user_csv_for_the_team_and_organizers_only(two_previews, client_for):
    contest, _, second = two_previews
    p = PrivacyPreview.objects.get(anonymized_set=second)
    url = f"/files/{p.per_user_id}/"
    body = b"".join(client_for("alpha1").get(url).streaming_content)
    assert body == storage.read_bytes(p.per_user) and body.startswith(b"user_id,reidentified_by")
    assert client_for("judge").get(url).status_code == 200
    assert client_for("beta1").get(url).status_code in (403, 404)


def test_preview_api_own_team_and_organizers_only(two_previews, client_for):
    contest, first, second = two_previews
    p = PrivacyPreview.objects.get(anonymized_set=second)
    url = f"/api/anonymized-sets/{second.pk}/preview/"
    data = client_for("alpha1").get(url).json()
    assert data["summary"] == p.summary and data["leak_map"] == p.leak_map and data["seed"] == p.seed
    assert data["per_user"]["sha256"] == p.per_user.sha256
    assert client_for("judge").get(url).status_code == 200
    assert client_for("beta1").get(url).status_code == 403
    csv = client_for("alpha1").get(f"/api/anonymized-sets/{second.pk}/preview.csv")
    assert b"".join(csv.streaming_content) == storage.read_bytes(p.per_user)
    assert client_for("beta1").get(f"/api/anonymized-sets/{second.pk}/preview.csv").status_code == 403
    PrivacyPreview.objects.filter(anonymized_set=first).delete()
    missing = client_for("alpha1").get(f"/api/anonymized-sets/{first.pk}/preview/")
    assert missing.status_code == 404 and "no privacy preview" in missing.json()["error"]["message"]


def test_the_card_shows_the_final_sets_preview_and_each_upload_page_its_own(two_previews, client_for):
    """Issue 22 item 5: after the team chooses upload #1 as final, the card shows #1's preview (marked as
    the final set's), with the range over the pseudonymizations and what the seeds are; each upload's
    own page shows that upload's preview, per-user risk and leak map, and the other upload's it does not."""
    contest, first, second = two_previews
    ds = first.dataset
    alpha = client_for("alpha1")
    html = alpha.get(f"/c/{contest.slug}/team/datasets/{ds.pk}/state.json").json()["html"]
    assert f"Privacy preview of upload #{second.seq}" in html and "preview-of-final" in html  # default: latest
    alpha.post(f"/c/{contest.slug}/team/uploads/{first.pk}/select/")
    html = alpha.get(f"/c/{contest.slug}/team/datasets/{ds.pk}/state.json").json()["html"]
    p1 = PrivacyPreview.objects.get(anonymized_set=first)
    assert f"Privacy preview of upload #{first.seq}" in html and "preview-of-final" in html
    assert f"Privacy preview of upload #{second.seq}" not in html
    # the judge's figure as one more draw: the draws and a 95% prediction interval, said not to be a bound
    interval = prediction_interval([d["s_t_min"] for d in p1.summary["draws"]])
    # each minimum's interval on a row of its own, named, so two ranges side by side cannot read as one; a
    # minimum the same in every draw gives its value and says so (the asterisk's note is folded on the card)
    t_row = re.search(r"judge's s_T,min, 95% prediction interval</th><td class=\"num\">([^<]*)</td>", html)
    assert t_row and "range over" not in html, html
    n = len(p1.summary["draws"])
    assert t_row.group(1) == (f"{interval['low']:.4f}–{interval['high']:.4f}" if interval["sd"]
                              else f"{interval['mean']:.4f} (the same in all {n} draws)")
    s_i = prediction_interval([d["s_i_min"] for d in p1.summary["draws"]])
    i_row = re.search(r"judge's s_I,min, 95% prediction interval</th><td class=\"num\">([^<]*)</td>", html)
    assert i_row and i_row.group(1) == (f"{s_i['low']:.4f}–{s_i['high']:.4f}" if s_i["sd"]
                                         else f"{s_i['mean']:.4f} (the same in all {n} draws)")
    assert "*" not in re.search(r"<tfoot>.*?</tfoot>", html, re.S).group(0)
    assert "s_T,min " + ", ".join(f"{d['s_t_min']:.4f}" for d in p1.summary["draws"]) in html
    assert "holds it about 95 times in 100, not always: it is not a bound" in html
    assert "the seed the judge's attack will use on this set" in html
    assert "--attack-seeds " + ",".join(f"{k}={v}" for k, v in p1.summary["attack_seeds"].items()) in html
    for aset, other in ((first, second), (second, first)):
        page = alpha.get(f"/c/{contest.slug}/team/uploads/{aset.pk}/").content.decode()
        p = PrivacyPreview.objects.get(anonymized_set=aset)
        assert f"Privacy preview of upload #{aset.seq}" in page
        assert f"Privacy preview of upload #{other.seq}" not in page
        assert f"{p.summary['s_i_min']:.4f} · {p.summary['s_t_min']:.4f}" in page
        assert f'<th scope="row">{p.summary["top_users"][0][0]}</th>' in page  # per-user risk
        assert f"/files/{p.per_user_id}/" in page
        assert f'<script id="leak-home-{aset.pk}" type="application/json">' in page  # the leak map
        assert f'<script id="leak-exposed-{aset.pk}" type="application/json">' in page
    assert client_for("beta1").get(f"/c/{contest.slug}/team/uploads/{first.pk}/").status_code in (403, 404)
