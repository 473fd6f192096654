"""The slot-of-day attacks follow the contest clock on a contest time axis other than the 2019 default.

I3/T3 ("8:00-8:59") and T4/T5/T7 (slot of the day) took ``slots_per_day`` and
``home_slots`` as parameters with the 2019 defaults (20, "0,1") and nothing
derived them from the contest's :class:`~scoring.grid.TimeAxis`, so a
contest with S = 10 or a day starting at 7:00 silently attacked the wrong
slots. :func:`home_slots` and :meth:`Algorithm.axis_params` derive them; the
``attack`` command takes ``--time info_time.csv``; a home slot outside the
day is an error instead of an attack on no events.
"""
from __future__ import annotations

import numpy as np
import pytest

from scoring import io as sio
from scoring.algorithms import attacks as at
from scoring.algorithms import get
from scoring.cli import main
from scoring.grid import Grid, TimeAxis
from scoring.traces import AnonymizedTraces, SetTable, Traces

GRID = Grid(nx=4, ny=4, min_x=139.68, max_x=139.72, min_y=35.65, max_y=35.69, hospitals=())


@pytest.mark.parametrize("axis, expected", [
    (TimeAxis(), "0,1"),                                                  # 2019: 8:00, 8:30
    (TimeAxis(slots_per_day=6, start_minute=7 * 60), "2,3"),              # 7:00 7:30 | 8:00 8:30
    (TimeAxis(slots_per_day=10, slot_minutes=60), "0"),                  # 8:00 only
    (TimeAxis(slots_per_day=12, slot_minutes=15, start_minute=7 * 60 + 45), "1,2,3,4"),
    (TimeAxis(slots_per_day=4, start_minute=9 * 60), "0,1"),              # no 8 o'clock: the first hour
])
def test_home_slots_are_the_8_oclock_slots_of_the_axis(axis, expected):
    assert at.home_slots(axis) == expected


def test_axis_params_only_for_algorithms_that_have_them():
    axis = TimeAxis(slots_per_day=6, start_minute=7 * 60, ref_days=2, org_days=2)
    assert get("I3-HomeProb").axis_params(axis) == {"slots_per_day": 6, "home_slots": "2,3"}
    assert get("T3-HomeProb").axis_params(axis) == {"slots_per_day": 6, "home_slots": "2,3"}
    assert get("T4-FrequentRegion").axis_params(axis) == {"slots_per_day": 6}
    assert get("I2-VisitProb").axis_params(axis) == {}
    assert get("A2-MRLH").axis_params(axis) == {}


def _i3_case():
    """S = 6 slots from 7:00 (home = slots 2, 3), 2 reference then 2 original days.

    User 1 is at region 2 at 8:00-8:59 and at 9 otherwise; user 2 the reverse.
    Pseudonym 3 (user 2) is at 9 at 8:00-8:59 on the original days and at
    2 at every other slot, pseudonym 4 (user 1) the reverse: only the axis'
    home slots point to the right users.
    """
    axis = TimeAxis(slots_per_day=6, start_minute=7 * 60, ref_days=2, org_days=2)
    day1 = np.array([9, 9, 2, 2, 9, 9])
    ref = Traces(np.array([1, 2]), axis.ref_time_ids(),
                 np.stack([np.tile(day1, 2), np.tile(np.where(day1 == 2, 9, 2), 2)]).astype(np.int32))
    org_day = np.array([2, 2, 9, 9, 2, 2])
    events = np.stack([np.tile(org_day, 2), np.tile(np.where(org_day == 2, 9, 2), 2)]).astype(np.int32)
    pub = AnonymizedTraces(np.array([3, 4]), axis.org_time_ids(), events, SetTable.singletons(GRID.M))
    return axis, ref, pub


def test_i3_on_a_day_starting_at_7_uses_the_8_oclock_slots_of_both_r_and_a():
    axis, ref, pub = _i3_case()
    i3 = get("I3-HomeProb")
    # time ids 13..24 of the original days: slot of day 2, 3 are time ids 15, 16, 21, 22
    assert list(at.slot_mask(pub.time_ids, 6, [2, 3]).nonzero()[0]) == [2, 3, 8, 9]
    assert list(i3.run(GRID, ref, pub, seed=0, **i3.axis_params(axis))) == [2, 1]
    # the 2019 defaults (S = 20, slots 0, 1) look at the wrong slots here
    assert list(i3.run(GRID, ref, pub, seed=0)) == [1, 2]
    t3 = get("T3-HomeProb")
    est = t3.run(GRID, ref, pub, seed=0, **t3.axis_params(axis))
    np.testing.assert_array_equal(est.regions, pub.events[::-1])   # user 1 <- pseudonym 4


def test_home_slot_outside_the_day_is_an_error():
    axis, ref, pub = _i3_case()
    with pytest.raises(ValueError, match=r"home_slots: slot 6 is outside 0\.\.5"):
        get("I3-HomeProb").run(GRID, ref, pub, seed=0, slots_per_day=6, home_slots="1,6")
    with pytest.raises(ValueError, match="home_slots"):
        get("T3-HomeProb").run(GRID, ref, pub, seed=0, slots_per_day=6, home_slots="-1")


def test_attack_command_takes_the_contest_time_file(tmp_path, capsys):
    axis, ref, pub = _i3_case()
    (tmp_path / "info_region.csv").write_text(GRID.info_region_csv())
    axis.write_info_time(tmp_path / "info_time.csv")
    sio.write_traces(ref, tmp_path / "ref.csv")
    sio.write_pubtraces(pub, tmp_path / "pub.csv")
    common = ["attack", "I3-HomeProb", str(tmp_path / "ref.csv"), str(tmp_path / "pub.csv"),
              str(tmp_path / "etable.csv"), "--grid", str(tmp_path / "info_region.csv")]
    assert main(common + ["--time", str(tmp_path / "info_time.csv")]) == 0, capsys.readouterr().err
    assert sio.read_etable(tmp_path / "etable.csv", 2, 2).tolist() == [2, 1]
    # an explicit --param still wins over the time file
    assert main(common + ["--time", str(tmp_path / "info_time.csv"), "--param", "slots_per_day=20",
                        "--param", "home_slots=0,1"]) == 0
    assert sio.read_etable(tmp_path / "etable.csv", 2, 2).tolist() == [1, 2]


@pytest.mark.parametrize("text", ["", "ref/org,time_id,day,hour,min\n", "ref/org,time_id,day,hour,min\nref,1,1,8\n",
                                  "ref/org,time_id,day,hour,min\nref,1,x,8,0\n"])
def test_a_malformed_time_file_is_a_clean_error(tmp_path, capsys, text):
    axis, ref, pub = _i3_case()
    (tmp_path / "info_time.csv").write_text(text)
    sio.write_traces(ref, tmp_path / "ref.csv")
    sio.write_pubtraces(pub, tmp_path / "pub.csv")
    code = main(["attack", "I3-HomeProb", str(tmp_path / "ref.csv"), str(tmp_path / "pub.csv"),
                 str(tmp_path / "etable.csv"), "--time", str(tmp_path / "info_time.csv")])
    assert code == 1
    assert "info_time" in capsys.readouterr().err
