"""The grid and the time axis (rules §2, 3): hand-worked distances and the shared region/time files."""
from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from scoring.grid import DEFAULT_HOSPITALS, Grid, TimeAxis

# Cell size of the default 2019 Tokyo grid, worked by hand from rules §2:
# width 0.12/32 deg of longitude x 91 km = 0.34125 km, height 0.1/32 deg x 111 km = 0.346875 km.
CELL_W_KM = 0.12 / 32 * 91
CELL_H_KM = 0.10 / 32 * 111


def test_hand_worked_distances_on_the_default_grid():
    g = Grid()
    assert round(g.distance[0, 1], 3) == 0.341          # d(1, 2): one cell east
    assert round(g.distance[0, 33], 3) == 0.487         # d(1, 34): one cell north-east
    assert g.distance[0, 1] == pytest.approx(CELL_W_KM, abs=1e-9)
    assert g.distance[0, 32] == pytest.approx(CELL_H_KM, abs=1e-9)   # d(1, 33): one cell north
    assert g.distance[0, 33] == pytest.approx(math.hypot(CELL_W_KM, CELL_H_KM), abs=1e-9)
    assert g.distance[0, 1023] == pytest.approx(math.hypot(31 * CELL_W_KM, 31 * CELL_H_KM), abs=1e-9)


def test_distance_matrix_is_a_symmetric_read_only_metric():
    g = Grid()
    d = g.distance
    assert d.shape == (1024, 1024) and d.dtype == np.float64
    assert np.array_equal(d, d.T)
    assert np.all(np.diag(d) == 0)
    assert not d.flags.writeable
    assert g.distance is d                                # cached


def test_region_ids_are_row_major_from_the_lower_left():
    g = Grid()
    assert g.M == 1024
    # r = y*NX + x + 1, so 0-based index 33 is x=1, y=1 and index 32 is x=0, y=1.
    assert tuple(g.xy[33]) == (1, 1) and tuple(g.xy[32]) == (0, 1) and tuple(g.xy[31]) == (31, 0)
    assert g.index_of(5, 7) == 7 * 32 + 5
    lat, lon = g.centres[0]
    assert lat == pytest.approx(35.65 + 0.5 * 0.1 / 32) and lon == pytest.approx(139.68 + 0.5 * 0.12 / 32)
    assert np.array_equal(g.locate(g.centres[:, 0], g.centres[:, 1]), np.arange(1024))
    assert g.locate(0.0, 0.0) == 0 and g.locate(90.0, 180.0) == 1023   # clamped to the border


def test_hospitals_and_weights():
    g = Grid()
    assert len(DEFAULT_HOSPITALS) == 37
    assert g.hospital_mask.sum() == 37 and g.hospital_mask[1] and not g.hospital_mask[0]  # region 2 is one
    w = g.region_weights(10)
    assert w[1] == 10 and w[0] == 1 and w.sum() == 37 * 10 + (1024 - 37)


@pytest.mark.parametrize("city", ["osaka", "tokyo"])
def test_info_region_round_trip_with_the_shared_files(pwscup2019, city, tmp_path):
    path = pwscup2019 / city / "info_region.csv"
    g = Grid.from_info_region(path)
    assert (g.nx, g.ny, g.M) == (32, 32, 1024)
    assert g.hospitals == DEFAULT_HOSPITALS
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["reg_id", "y_id", "x_id", "y(center)", "x(center)", "hospital"]
    ours = list(csv.reader(g.info_region_csv().splitlines()))
    assert ours[0] == rows[0] and len(ours) == len(rows)
    theirs = np.array(rows[1:], dtype=float)
    mine = np.array(ours[1:], dtype=float)
    assert np.array_equal(theirs[:, [0, 1, 2, 5]], mine[:, [0, 1, 2, 5]])
    assert np.allclose(theirs[:, 3:5], mine[:, 3:5], rtol=0, atol=1e-9)
    g.write_info_region(tmp_path / "info_region.csv")
    again = Grid.from_info_region(tmp_path / "info_region.csv")
    assert again == g
    assert np.allclose(again.distance, g.distance, rtol=0, atol=1e-12)


def test_tokyo_file_is_the_default_grid(pwscup2019):
    g = Grid.from_info_region(pwscup2019 / "tokyo" / "info_region.csv")
    d = Grid()
    assert (g.nx, g.ny, g.hospitals) == (d.nx, d.ny, d.hospitals)
    for a in ("min_x", "max_x", "min_y", "max_y"):
        assert getattr(g, a) == pytest.approx(getattr(d, a), abs=1e-9)
    assert np.allclose(g.distance, d.distance, rtol=0, atol=1e-9)


@pytest.mark.parametrize("city", ["osaka", "tokyo"])
def test_info_time_round_trip_with_the_shared_files(pwscup2019, city, tmp_path):
    path = pwscup2019 / city / "info_time.csv"
    t = TimeAxis.from_info_time(path)
    assert (t.slots_per_day, t.ref_days, t.org_days, t.start_minute, t.slot_minutes) == (20, 2, 2, 480, 30)
    assert t.info_time_csv() == path.read_text(encoding="utf-8-sig").replace("\r\n", "\n")
    assert np.array_equal(t.ref_time_ids(), np.arange(1, 41))
    assert np.array_equal(t.org_time_ids(), np.arange(41, 81))
    t.write_info_time(tmp_path / "info_time.csv")
    assert TimeAxis.from_info_time(tmp_path / "info_time.csv") == t


def test_time_axis_slots_and_clock():
    t = TimeAxis()                           # 2019 final round: 20 slots, 20 + 20 days
    assert len(t.ref_time_ids()) == 400 and t.org_time_ids()[0] == 401 and t.org_time_ids()[-1] == 800
    assert list(t.slot_of_day([1, 20, 21, 401])) == [0, 19, 0, 0]
    h, m = t.clock(np.array([0, 1, 19]))
    assert list(h) == [8, 8, 17] and list(m) == [0, 30, 30]
    sporadic = TimeAxis(ref_days=2, org_days=2, day_numbers=(3, 9, 10, 17))
    assert TimeAxis.from_info_time(sporadic.info_time_csv()) == sporadic
