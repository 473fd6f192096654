"""Privacy audit of coloc: every noised statistic, every neighbour (one user removed or added), against the
sensitivity the ledger declares, on the built-in city, the 2019 Osaka set and constructed worst cases; and
neighbouring training sets give models and manifests that differ only in noised values."""
from __future__ import annotations

import json

import numpy as np
import pytest

from scoring.grid import Grid, TimeAxis
from scoring.io import read_traces
from scoring.traces import Traces
from synth import audit, coloc
from synth.calibrate import OSAKA
from synth.city import CityModel

pytestmark = pytest.mark.slow

AXIS = TimeAxis(slots_per_day=20, start_minute=480, slot_minutes=30, ref_days=5, org_days=5)


@pytest.fixture(scope="module")
def city():
    grid = Grid()
    model = CityModel(grid, seed=0)
    return grid, model.simulate(300, 10, time_axis=AXIS, seed=1), model.simulate(20, 10, time_axis=AXIS, seed=2)


def _paper_trimming(traces, grid, *, slots_per_day, friends=None, c=5, c_trans=5, min_meetings=3, salt=0):
    """The former rule (read an event while it is among the first c events of both its users): the
    statistic the audit must catch. Everything else as :func:`synth.coloc.exact_statistics`."""
    out = coloc.exact_statistics(traces, grid, slots_per_day=slots_per_day, friends=friends, c=c,
                                 c_trans=c_trans, min_meetings=min_meetings, salt=salt)
    u, v, col, x = coloc.friend_colocations(np.asarray(traces.regions), out["edges"])
    who = np.concatenate([u, v])
    order = np.lexsort((np.tile(np.arange(len(u)), 2), np.tile(col, 2), who))
    rank = np.empty(2 * len(u), np.int64)
    rank[order] = np.arange(2 * len(u)) - np.searchsorted(who[order], who[order], side="left")
    keep = np.maximum(rank[:len(u)], rank[len(u):]) < c
    slot = (np.asarray(traces.time_ids)[col[keep]] - 1) % slots_per_day
    out["Q"] = np.bincount(slot * grid.M + x[keep], minlength=slots_per_day * grid.M).reshape(
        slots_per_day, grid.M).astype(float)
    return out


def test_city_every_user_removed_and_added_within_the_declared_sensitivity(city):
    grid, traces, extra = city
    H = coloc.Hierarchy.of(coloc.block_hierarchy(grid), grid.M)
    report = audit.audit(traces, grid, slots_per_day=20, c=5, c_trans=5, hierarchy=H, add=extra)
    assert report.neighbours == 320
    assert report.holds, report.violations()
    assert report.largest["Q"] > 0 and report.largest["transitions"] == 5    # the bounds are reached, not vacuous
    assert report.declared == {"p": 2 / 299, "Q": 5.0, "Q privelet": H.height * 5.0, "transitions": 5.0}


def test_city_audit_fails_on_the_papers_trimming(city):
    grid, traces, _ = city
    report = audit.audit(traces, grid, slots_per_day=20, c=5, remove=range(120), statistics=_paper_trimming)
    assert "Q" in report.violations() and report.largest["Q"] > 5


@pytest.mark.skipif(not (OSAKA / "reftraces_team001_data01_IDP.csv").exists(), reason="2019 data not present")
def test_osaka_every_user_removed_within_the_declared_sensitivity():
    grid = Grid.from_info_region(OSAKA / "info_region.csv")
    ref = read_traces(OSAKA / "reftraces_team001_data01_IDP.csv", grid)
    org = read_traces(OSAKA / "orgtraces_team001_data01_IDP.csv", grid)
    ids = np.arange(1, ref.L + 1)
    train = Traces(ref.user_ids[:300], ids, ref.regions[:300])
    extra = Traces(org.user_ids[300:315], ids, org.regions[300:315])
    report = audit.audit(train, grid, slots_per_day=20, c=10, c_trans=5, add=extra)
    assert report.holds, report.violations()
    assert report.largest["Q"] > 0
    paper = audit.audit(train, grid, slots_per_day=20, c=5, statistics=_paper_trimming)
    assert not paper.holds


def _hub(K: int, c: int = 5):
    """The worst case of per-user trimming: a hub meets each of her K friends c times (friend j at instants
    j c .. j c + c - 1), then each friend meets a friend of her own c times. Everyone else apart."""
    grid = Grid(nx=8, ny=8, hospitals=())
    n = 1 + 2 * K
    L = -(-(K + 1) * c // 20) * 20
    regions = np.tile(np.arange(n, dtype=np.int32)[:, None] % grid.M, (1, L))   # each user alone
    for j in range(1, K + 1):
        meet = slice((j - 1) * c, j * c)
        regions[0, meet] = regions[j, meet]                                   # hub visits friend j
        regions[j, K * c:(K + 1) * c] = regions[K + j, K * c:(K + 1) * c]     # visits her own friend
    friends = np.array([(0, j) for j in range(1, K + 1)] + [(j, K + j) for j in range(1, K + 1)])
    return grid, Traces(np.arange(1, n + 1), np.arange(1, L + 1), regions), friends


@pytest.mark.parametrize("K", [1, 5, 20])
def test_a_user_with_many_friends_stays_within_c(K):
    grid, traces, friends = _hub(K)
    paper = audit.audit(traces, grid, slots_per_day=20, friends=friends, c=5, min_users=traces.m - 1,
                        remove=[0], statistics=_paper_trimming)
    assert paper.largest["Q"] == (K + 1) * 5 and not paper.holds          # 10 / 30 / 105, the figures
    for c in (5, 40):
        report = audit.audit(traces, grid, slots_per_day=20, friends=friends, c=c, min_users=traces.m - 1,
                             add=Traces(traces.user_ids[:3], traces.time_ids, np.asarray(traces.regions)[:3]),
                             add_friends=[np.arange(1, K + 1)] * 3)
        assert report.holds, report.violations()
        assert report.largest["Q"] > 0


def test_ledger_charges_the_graph_for_q_and_uses_public_bounds(city):
    grid, traces, _ = city
    model = coloc.train(traces, grid, friends=np.array([[0, 1], [1, 2]]), eps1=0.5, eps2=1.0, eps3=2.0,
                        min_users=250, seed=0)
    led = model.ledger()
    assert led["totals"] == {"friendship graph": 1.5, "training traces": 3.0} and led["per_user"] == 3.5
    assert [m["sensitivity"] for m in led["mechanisms"]] == pytest.approx([2 / 250, 5.0, 5.0])
    assert audit.declared_sensitivities(led["mechanisms"]) == pytest.approx(
        {"p": 2 / 250, "Q": 5.0, "transitions": 5.0})
    with pytest.raises(ValueError, match="at least min_users = 400 users"):
        coloc.train(traces, grid, min_users=400)


def _strip_noise(describe: dict) -> dict:
    d = json.loads(json.dumps(describe))
    d.pop("p_friend")
    return d


def test_neighbouring_training_sets_differ_only_in_noised_values(city, tmp_path):
    """Model file meta, model description (the manifest's ``model``) and the console's summary are equal between
    D and D minus one user; only p', Q' and what is computed from them (the transition model) differ."""
    from contest.services.generation import synthesizer_summary
    from synth.common import read_npz
    grid, traces, _ = city
    sub, _f = audit.without_user(traces, None, 7)
    a = coloc.train(traces, grid, min_users=250, seed=3)
    b = coloc.train(sub, grid, min_users=250, seed=3)
    a.save(tmp_path / "a.npz")
    b.save(tmp_path / "b.npz")
    meta_a, _ = read_npz(tmp_path / "a.npz", "coloc", coloc.MODEL_VERSION, ())
    meta_b, _ = read_npz(tmp_path / "b.npz", "coloc", coloc.MODEL_VERSION, ())
    assert meta_a.pop("p_friend") != meta_b.pop("p_friend")
    assert meta_a == meta_b
    assert _strip_noise(a.describe()) == _strip_noise(b.describe())
    with np.load(tmp_path / "a.npz") as z:
        assert set(z.files) == {"meta", "Q", "succ", "prob", "start"}        # no exact statistic stored
    text = json.dumps(a.describe())
    for leak in ("training_users", "friendships", "colocations", "seed"):
        assert leak not in text
    manifest = lambda m: dict(generator="coloc", model=m.describe(), sets=[{"report": {"colocations_planted": 5}}])  # noqa: E731
    assert synthesizer_summary(manifest(a)) == synthesizer_summary(manifest(b))
    assert a.training_stats["training_users"] == 300 and "NOT differentially private" in a.training_stats["note"]
