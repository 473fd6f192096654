"""Pages read what jobs computed: no page request parses a trace file or runs an algorithm.

After a contest is played (uploads scored, phase closed, judge attacks run, results published),
every trace reader and ``Algorithm.run`` are made to fail, and then every page a viewer can
open is requested: each must still render from the stored rows, figures and snapshot.
"""
from __future__ import annotations

import pytest

from contest.models import AnonymizedSet, Dataset
from contest.services import data, results
from scoring.algorithms.registry import Algorithm
from tests.contest.conftest import built_on_generated, upload_all_and_close

pytestmark = pytest.mark.django_db

READERS = ("traces", "pubtraces", "ptable", "anotraces", "etable", "etraces")


@pytest.fixture
def played(request):
    def play(generated, capture):
        contest = upload_all_and_close(generated, {1: ("A2-MRLH", {"lambda": 0.0}), 2: ("A3-kRR", {"eps": 8.0}),
                                                   3: ("A1-none", {})}, capture)
        results.publish_results(contest)  # the results job: snapshot with Fig. 8 and the analyses
        return contest
    return built_on_generated(request, "played", play)


def _forbid_heavy_work(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a page request parsed a trace file or ran an algorithm")
    for name in READERS:
        monkeypatch.setattr(data, name, refuse)
    monkeypatch.setattr(Algorithm, "run", refuse)


def test_every_page_renders_from_stored_figures(played, client, client_for, monkeypatch):
    contest = played
    ds = Dataset.objects.get(round__contest=contest, number=1, challenge=1)
    upload = AnonymizedSet.objects.get(dataset=ds, final=True)
    assert ds.population_id and upload.population_id, "the jobs store the map's figures"
    _forbid_heavy_work(monkeypatch)
    public = ["", "rules/", "leaderboard/", "leaderboard/?round=total", "attack-matrix/", "awards/", "plots/",
              "analyses/"]
    for path in public:
        assert client.get(f"/c/{contest.slug}/{path}").status_code == 200, path
    alpha = client_for("alpha1")
    for path in ("team/", f"team/datasets/{ds.pk}/map/", f"team/datasets/{ds.pk}/map/?slot=3",
                 f"team/datasets/{ds.pk}/map/?upload={upload.pk}", f"team/uploads/{upload.pk}/"):
        assert alpha.get(f"/c/{contest.slug}/{path}").status_code == 200, path
    judge = client_for("judge")
    for path in (f"/console/{contest.slug}/", f"/console/{contest.slug}/jobs/", f"/c/{contest.slug}/leaderboard/"):
        assert judge.get(path).status_code == 200, path


def test_plots_show_the_sample_anonymizers_the_results_job_stored(played, client, monkeypatch):
    from contest.models import ResultsSnapshot
    from contest.services.samples import DEFAULT_SAMPLE_ANONYMIZERS

    contest = played
    stored = ResultsSnapshot.objects.get(contest=contest, published=True).data["sample_anonymizers"]["1"]
    assert [r["label"] for r in stored] == [c[0] for c in DEFAULT_SAMPLE_ANONYMIZERS]
    _forbid_heavy_work(monkeypatch)
    html = client.get(f"/c/{contest.slug}/plots/").content.decode()
    for row in stored:
        assert row["label"] in html and f"{row['s_i_min']:.4f}" in html


def test_map_shares_are_the_stored_population(played, client_for, monkeypatch):
    """The map's numbers are the stored figure's, which are scoring.analyses on the files (checked here
    before the readers are forbidden)."""
    import json
    import re

    import numpy as np

    from contest.services import figures, storage
    from scoring.analyses import population_counts

    contest = played
    grid = contest.grid()
    ds = Dataset.objects.get(round__contest=contest, number=2, challenge=2)
    upload = AnonymizedSet.objects.get(dataset=ds, final=True)
    truth = data.traces(ds.original, grid)
    anon = data.anotraces(storage.read_csv_bytes(upload.file), grid, truth)
    np.testing.assert_allclose(figures.read_population(upload.population),
                               population_counts(grid, anon, contest.slots_per_day), rtol=1e-6)
    _forbid_heavy_work(monkeypatch)
    html = client_for("beta1").get(f"/c/{contest.slug}/team/datasets/{ds.pk}/map/?upload={upload.pk}").content.decode()
    spec = json.loads(re.search(r'<script id="map-anonymized" type="application/json">(.*?)</script>', html, re.S).group(1))
    counts = population_counts(grid, anon, contest.slots_per_day).sum(axis=0)
    np.testing.assert_allclose(spec["values"], counts / counts.sum(), atol=1e-7)
