"""rules §13 analyses stored with the results: the snapshot's figures are exactly ``scoring.analyses`` on the stored files."""
from __future__ import annotations

import numpy as np
import pytest

from contest.models import AnonymizedSet, Dataset
from contest.services import analyses, results, round_figures, storage
from tests.contest.conftest import built_on_generated, upload_all_and_close

pytestmark = pytest.mark.django_db


@pytest.fixture
def closed_small(request):
    """Every team uploaded both sets (one deliberately invalid), and the anonymization phase closed."""
    return built_on_generated(request, "closed_small", lambda contest, capture: upload_all_and_close(
        contest, {1: ("A2-MRLH", {"lambda": 0.0}), 2: ("A3-kRR", {"eps": 0.1}), 3: ("A1-none", {})}, capture))


def test_stored_figures_equal_scoring_analyses_on_the_files(closed_small):
    from scoring import analyses as sa
    from scoring import io as sio
    from synth.city import CityModel

    contest = closed_small
    snap = results.snapshot(contest)
    stored = snap.data["analyses"]
    assert "error" not in stored
    rows = stored["rounds"]["1"]["utility"]
    finals = AnonymizedSet.objects.filter(dataset__round__contest=contest, final=True)
    valid = finals.filter(valid=True)
    assert finals.filter(valid=False).exists(), "the kRR(0.1) sets are below s_req and must be left out"
    assert sorted(r["set_id"] for r in rows) == sorted(valid.values_list("pk", flat=True))
    grid = contest.grid()
    S = contest.slots_per_day
    pois = CityModel(grid, seed=contest.seed % (2**31)).poi_region
    for row in rows:
        aset = valid.get(pk=row["set_id"])
        ds = aset.dataset
        org = sio.read_traces(storage.read_csv_bytes(ds.original), grid)
        ref = sio.read_traces(storage.read_csv_bytes(ds.reference), grid)
        anon = sio.read_anotraces(storage.read_csv_bytes(aset.file), grid, org)
        assert row["s_u"] == aset.s_u and row["challenge"] == ds.challenge and row["team"] == ds.number
        assert row["tp_tv_top50"] == pytest.approx(sa.tp_tv_top50(grid, org, anon, S), abs=1e-12)
        assert row["tm_emd"] == pytest.approx(sa.tm_emd(grid, org, anon, S, 50, 0), abs=1e-12)
        assert row["poi_accuracy"] == pytest.approx(sa.poi_accuracy(grid, org, anon, pois), abs=1e-12)
        base = sa.reference_baseline(grid, ref, org, S)
        assert row["reference"] == pytest.approx(sa.utility_analyses(grid, org, base, S, pois), abs=1e-12)
        uni = sa.uniform_baseline(grid, org, seed=analyses._uniform_seed(contest.seed, ds))
        assert row["uniform"] == pytest.approx(sa.utility_analyses(grid, org, uni, S, pois), abs=1e-12)
        # the figures separate: a real anonymization is closer to O than random regions
        assert row["tp_tv_top50"] < row["uniform"]["tp_tv_top50"]
        assert row["poi_accuracy"] > row["uniform"]["poi_accuracy"]
    # fairness: SD over the three teams of the judge-attack minima, per challenge and anonymizer
    fair = stored["rounds"]["1"]["fairness"]
    assert {(f["challenge"], f["label"]) for f in fair} == {
        (ch, label) for ch in (1, 2) for label, _n, _p in round_figures.FAIRNESS_ANONYMIZERS}
    for f in fair:
        assert f["n_teams"] == 3 and sorted(f["teams"]) == ["1", "2", "3"]
        s_i = [v[0] for v in f["teams"].values()]
        s_t = [v[1] for v in f["teams"].values()]
        assert f["sd_s_i_min"] == pytest.approx(float(np.std(s_i)), abs=1e-12)
        assert f["sd_s_t_min"] == pytest.approx(float(np.std(s_t)), abs=1e-12)
    # the reused Fig. 8 evaluation is what each team's entry holds
    from contest.services.samples import evaluate_sample_anonymizers
    ds = Dataset.objects.get(round__contest=contest, number=2, challenge=1)
    direct = evaluate_sample_anonymizers(contest, ds, round_figures.FAIRNESS_ANONYMIZERS)
    for f in (f for f in fair if f["challenge"] == 1):
        i = [c[0] for c in round_figures.FAIRNESS_ANONYMIZERS].index(f["label"])
        assert f["teams"]["2"] == [direct[i]["s_i_min"], direct[i]["s_t_min"]]


def test_a_failing_analysis_does_not_hold_back_the_results(closed_small, monkeypatch):
    def broken(contest, **options):
        raise RuntimeError("disk gone")
    monkeypatch.setattr(analyses, "contest_analyses", broken)
    snap = results.snapshot(closed_small)
    assert snap.data["analyses"] == {"rounds": {}, "error": "RuntimeError: disk gone"}
    assert snap.data["sets"]
