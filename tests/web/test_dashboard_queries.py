"""The team dashboard's query count is pinned and does not grow with the team's uploads.

(It once ran one query per upload and per attack to find each one's scoring job: 74 queries
for a team with a few dozen uploads. Now every list is fetched once.)
"""
from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from contest.models import Dataset, PublicSet
from contest.services import uploads
from tests.contest.conftest import anonymize_csv, user

pytestmark = pytest.mark.django_db

#: Queries of one dashboard view (session, user, team, contest state, round, datasets, uploads,
#: their jobs, public sets, attacks, their jobs, page frame); the same for 1 or 100 uploads. Before the
#: view, the page cache asks which team the page shows (contest, membership) and reads that team's stamp.
MAX_QUERIES = 34


def _queries(client, url) -> int:
    """The queries of one dashboard load with nothing kept in the cache (the page, the stamps' reads: a
    team's stamp reads its nobody's-team part again only when that part changed), so two loads compare."""
    cache.clear()
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


def test_dashboard_queries_do_not_grow_with_anonymized_uploads(generated, client_for, django_capture_on_commit_callbacks,
                                                               django_assert_max_num_queries):
    contest = generated
    alpha, url = client_for("alpha1"), f"/c/{contest.slug}/team/"
    ds = {c: Dataset.objects.get(round__contest=contest, number=1, challenge=c) for c in (1, 2)}

    def upload(challenge, seed):
        with django_capture_on_commit_callbacks(execute=True):
            uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds[challenge], name="a.csv",
                                          content=anonymize_csv(ds[challenge], "A3-kRR", seed=seed, eps=8.0))

    upload(1, 1)
    upload(2, 1)  # one upload in each challenge card
    few = _queries(alpha, url)
    for seed in range(2, 6):
        upload(1, seed)
        upload(2, seed)
    with django_assert_max_num_queries(MAX_QUERIES):
        many = _queries(alpha, url)
    assert many == few, f"{few} queries with 2 uploads, {many} with 10"


def test_dashboard_queries_do_not_grow_with_attacks(closed_unobfuscated, client_for, django_capture_on_commit_callbacks,
                                                    django_assert_max_num_queries):
    contest = closed_unobfuscated
    beta, url = client_for("beta1"), f"/c/{contest.slug}/team/"
    m = contest.users_per_set
    etable = ("user_id\n" + "".join(f"{u}\n" for u in range(1, m + 1))).encode()
    targets = list(PublicSet.objects.filter(dataset__round__contest=contest).exclude(dataset__number=2))

    def attack(ps):
        with django_capture_on_commit_callbacks(execute=True):
            uploads.submit_attack(user=user("beta1"), attacker=user("beta1").memberships.get().team, target=ps,
                                  kind="etable", content=etable, name="etable.csv")

    attack(targets[0])
    few = _queries(beta, url)
    for ps in targets:
        attack(ps)
    with django_assert_max_num_queries(MAX_QUERIES):
        many = _queries(beta, url)
    assert many == few, f"{few} queries with 1 attack, {many} with {1 + len(targets)}"


def test_no_page_query_loads_stored_file_content(closed_unobfuscated, client_for):
    """At the 2019 size a round's public sets and data sets carry hundreds of MB of file content; the
    dashboard needs their names and sizes only (a join that loaded the bytes made it take 1.2 s): it joins
    the stored files' rows and never reads their chunks."""
    contest = closed_unobfuscated
    alpha = client_for("alpha1")
    for url in (f"/c/{contest.slug}/team/", f"/c/{contest.slug}/team/history.csv"):
        with CaptureQueriesContext(connection) as ctx:
            assert alpha.get(url).status_code == 200
        joined = [q["sql"] for q in ctx.captured_queries if "JOIN" in q["sql"] and "storedfile" in q["sql"]]
        assert joined, "the page no longer joins stored files: this test shows nothing"
        assert not [q["sql"] for q in ctx.captured_queries if "storedchunk" in q["sql"]], url
