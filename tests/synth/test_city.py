"""The built-in city model (synth/city.py)."""
from __future__ import annotations

import csv

import numpy as np
import pytest

from scoring.grid import Grid, TimeAxis
from scoring.io import read_traces
from synth.city import CATEGORIES, ROLE_OTHER, ROLE_WORKER, CityModel, city_model, write_city


@pytest.fixture(scope="module")
def tokyo():
    return CityModel(Grid(), seed=7)


@pytest.fixture(scope="module")
def week(tokyo):
    """400 people over 7 days (Monday..Sunday) on the contest's day."""
    return tokyo.simulate_population(400, 7, seed=11)


def test_shapes_and_ids(week):
    tr = week.traces
    assert tr.regions.shape == (400, 7 * 20)
    np.testing.assert_array_equal(tr.user_ids, np.arange(1, 401))
    np.testing.assert_array_equal(tr.time_ids, np.arange(1, 141))
    assert tr.regions.dtype == np.int32
    assert tr.regions.min() >= 0 and tr.regions.max() < 1024


def test_deterministic_given_seeds():
    a = CityModel(Grid(), seed=3)
    b = CityModel(Grid(), seed=3)
    np.testing.assert_array_equal(a.points_of_interest(), b.points_of_interest())
    np.testing.assert_array_equal(a.simulate(50, 3, seed=5).regions, b.simulate(50, 3, seed=5).regions)
    assert not np.array_equal(a.simulate(50, 3, seed=5).regions, a.simulate(50, 3, seed=6).regions)
    c = CityModel(Grid(), seed=4)
    assert not np.array_equal(a.points_of_interest()["region"], c.points_of_interest()["region"])


@pytest.mark.parametrize("grid", [
    Grid(nx=3, ny=2, min_x=10.0, max_x=10.03, min_y=50.0, max_y=50.02, hospitals=(2,)),
    Grid(nx=1, ny=1, min_x=0.0, max_x=0.01, min_y=0.0, max_y=0.01, hospitals=()),
    Grid(nx=64, ny=40, min_x=-74.1, max_x=-73.8, min_y=40.6, max_y=40.85, hospitals=(5, 700, 2560)),
])
def test_any_grid(grid):
    model = CityModel(grid, seed=1)
    tr = model.simulate(30, 2, seed=2)
    assert tr.regions.shape == (30, 40)
    assert tr.regions.min() >= 0 and tr.regions.max() < grid.M
    pois = model.points_of_interest()
    assert (pois["region"] >= 0).all() and (pois["region"] < grid.M).all()
    np.testing.assert_array_equal(np.sort(pois["region"][pois["category"] == "hospitals"]),
                                  np.asarray(grid.hospitals) - 1)


def test_any_time_axis(tokyo):
    tr = tokyo.simulate(20, 3, slots_per_day=35, start_minute=9 * 60, slot_minutes=20, seed=1)
    assert tr.regions.shape == (20, 105)
    tr = tokyo.simulate(20, 2, time_axis=TimeAxis(slots_per_day=48, start_minute=0, slot_minutes=30), seed=1)
    assert tr.regions.shape == (20, 96)


def test_bad_arguments(tokyo):
    with pytest.raises(ValueError, match="at least one user"):
        tokyo.simulate(0, 3)
    with pytest.raises(ValueError, match="slot_minutes"):
        tokyo.simulate(5, 1, slot_minutes=0)
    with pytest.raises(ValueError, match="worker_share"):
        CityModel(Grid(), worker_share=0.9, student_share=0.2)
    with pytest.raises(ValueError, match="hub"):
        CityModel(Grid(nx=2, ny=2, min_x=0, max_x=1, min_y=0, max_y=1, hospitals=()),
                  n_random_hubs=0)


def test_points_of_interest(tokyo, tmp_path):
    pois = tokyo.points_of_interest()
    assert set(pois["category"]) == set(CATEGORIES)
    np.testing.assert_array_equal(pois["poi_id"], np.arange(len(pois)))
    # Each POI's coordinates lie inside its region's cell.
    np.testing.assert_array_equal(Grid().locate(pois["lat"], pois["lon"]), pois["region"])
    # Hospitals are exactly the grid's hospital regions.
    np.testing.assert_array_equal(np.sort(pois["region"][pois["category"] == "hospitals"]),
                                  np.asarray(Grid().hospitals) - 1)
    # Offices crowd the business hubs more than schools do.
    off = pois["region"][pois["category"] == "offices"]
    sch = pois["region"][pois["category"] == "schools"]
    assert tokyo.business[off].mean() > 2 * tokyo.business[sch].mean()
    path = tmp_path / "pois.csv"
    tokyo.write_points_of_interest(path)
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["poi_id", "y", "x", "category", "y_id", "x_id", "2D_id"]
    assert len(rows) == len(pois) + 1
    r = rows[1]
    assert int(r[6]) == int(r[4]) * 32 + int(r[5]) == pois["region"][0]
    assert r[3] == pois["category"][0]


def test_gravity_model_keeps_commutes_short(tokyo, week):
    d = Grid().distance
    w = week.roles == ROLE_WORKER
    commute = d[week.homes[w], week.works[w]].mean()
    # The same work places shuffled among the same homes: the gravity model's choice is closer.
    rng = np.random.default_rng(0)
    shuffled = d[week.homes[w], rng.permutation(week.works[w])].mean()
    assert commute < 0.8 * shuffled
    # Homes follow the residential field, work places the business field.
    assert tokyo.business[week.works[w]].mean() > 2 * tokyo.business[week.homes].mean()
    np.testing.assert_array_equal(week.works[week.roles == ROLE_OTHER], week.homes[week.roles == ROLE_OTHER])


def _near(grid, regions, places, km):
    """regions (n, ...) within ``km`` of each row's place (n,)."""
    return grid.distance[regions, places.reshape(places.shape + (1,) * (regions.ndim - 1))] <= km


def test_daily_schedule_weekdays_and_weekends(week):
    """Near home early in the morning, near work at 11:00 on weekdays, mostly not at weekends."""
    g = Grid()
    R = week.traces.regions.reshape(400, 7, 20)         # user, day (Mon..Sun), slot (8:00..17:30)
    w = week.roles == ROLE_WORKER
    at_work_11 = _near(g, R[w][:, :, 6], week.works[w], 1.5)           # slot 6 = 11:00
    weekday = at_work_11[:, :5].mean()
    weekend = at_work_11[:, 5:].mean()
    assert weekday > 0.6
    assert weekend < 0.35
    # At 8:00 on a Sunday nearly everyone is at or near home.
    home_8_sunday = _near(g, R[:, 6, 0], week.homes, 1.5).mean()
    assert home_8_sunday > 0.8
    # Everyone moves: no user spends a whole week in one region.
    assert (np.array([len(np.unique(r)) for r in week.traces.regions]) > 3).all()


def test_favourites_are_visited_zipf_like(tokyo):
    """Away from home and work, the favourite a person is nearest to follows the Zipf preference."""
    sim = tokyo.simulate_population(600, 14, seed=4)
    D = Grid().distance
    R = sim.traces.regions
    away = (D[R, sim.homes[:, None]] > 1.5) & (D[R, sim.works[:, None]] > 1.5)
    to_fav = np.stack([D[R, sim.favourites[:, k:k + 1]] for k in range(sim.favourites.shape[1])], axis=-1)
    at_fav = away & (to_fav.min(-1) <= 0.5)
    share = np.bincount(np.argmin(to_fav, -1)[at_fav], minlength=to_fav.shape[-1]) / at_fav.sum()
    assert at_fav.mean() > 0.02
    assert share[0] > share[1] > share[2] > share[-1]
    assert share[0] > 1.8 * share[-1]


def test_write_city(tmp_path):
    paths = write_city(tmp_path / "city", Grid(), n_users=30, n_days=4, seed=2)
    assert set(paths) == {"traintraces", "pois", "info_region", "info_time"}
    grid = Grid.from_info_region(paths["info_region"])
    assert grid.M == 1024 and grid.hospitals == Grid().hospitals
    tr = read_traces(paths["traintraces"], grid)
    assert tr.regions.shape == (30, 80)
    expected = CityModel(Grid(), 2).simulate(30, 4, seed=2)
    np.testing.assert_array_equal(tr.regions, expected.regions)
    axis = TimeAxis.from_info_time(paths["info_time"])
    assert (axis.slots_per_day, axis.ref_days, axis.org_days, axis.start_minute) == (20, 4, 0, 480)
    first = paths["traintraces"].read_bytes()
    write_city(tmp_path / "again", Grid(), n_users=30, n_days=4, seed=2)
    assert (tmp_path / "again" / "traintraces.csv").read_bytes() == first
    assert (tmp_path / "again" / "pois.csv").read_bytes() == paths["pois"].read_bytes()


def test_a_city_shared_by_the_process_draws_what_a_fresh_one_draws():
    """city_model builds a city once per process and keeps its gravity table over every region between
    simulations: a simulation after others (another size and seed in between) is a fresh model's, to the byte."""
    grid = Grid(nx=12, ny=10, min_x=139.6, max_x=139.8, min_y=35.6, max_y=35.75, hospitals=())
    shared = city_model(grid, 31)
    assert city_model(grid, 31) is shared and city_model(grid, 32) is not shared
    first = shared.simulate_population(15, 2, slots_per_day=8, seed=4)
    shared.simulate_population(60, 1, slots_per_day=8, seed=5)
    again = shared.simulate_population(15, 2, slots_per_day=8, seed=4)
    fresh = CityModel(grid, seed=31).simulate_population(15, 2, slots_per_day=8, seed=4)
    assert shared._gravity_tables                                     # the table was kept
    for sim in (again, fresh):
        np.testing.assert_array_equal(sim.traces.regions, first.traces.regions)
        np.testing.assert_array_equal(sim.favourites, first.favourites)
