"""The single-column readers (etable, etraces) refuse a comma inside a cell.

The one-column fast path accepted the comma byte as if it were a digit
(``'1,2'`` parsed to 1*100 + (',' - '0')*10 + 2 = 62), so a malformed cell
was silently read as a different, in-range id.
"""
from __future__ import annotations

import numpy as np
import pytest

from scoring import io as sio
from scoring.errors import ValidationError
from scoring.grid import Grid
from scoring.traces import Traces

GRID = Grid()


def _truth(m=2, L=3) -> Traces:
    return Traces(np.arange(1, m + 1), np.arange(41, 41 + L), np.zeros((m, L), dtype=np.int32))


def _file(header: str, cells) -> bytes:
    return (header + "\n" + "\n".join(cells) + "\n").encode()


@pytest.mark.parametrize("cell", ["1,2", "12,", ",12", "1,,2"])
def test_etraces_cell_with_a_comma_is_refused(cell):
    data = _file("reg_id", [cell] + ["5"] * 5)
    with pytest.raises(ValidationError) as err:
        sio.read_etraces(data, GRID, _truth())
    assert err.value.total == 1
    assert err.value.issues[0].line == 2
    assert "is not a region id" in str(err.value) and repr(cell) in str(err.value)


@pytest.mark.parametrize("cell", ["1,2", "3,0", "1,,"])
def test_etable_cell_with_a_comma_is_refused(cell):
    # m = 2000: the garbage value 62 would be a valid user id
    data = _file("user_id", [cell] + ["1"] * 1999)
    with pytest.raises(ValidationError) as err:
        sio.read_etable(data, 2000, 2000)
    assert err.value.issues[0].line == 2
    assert "is not a non-negative integer" in str(err.value)


def test_clean_single_column_files_still_take_the_fast_path():
    truth = _truth()
    est = sio.read_etraces(_file("reg_id", ["1", "1024", "7", "007", "9", "10"]), GRID, truth)
    np.testing.assert_array_equal(est.regions.ravel(), [0, 1023, 6, 6, 8, 9])
    np.testing.assert_array_equal(sio.read_etable(_file("user_id", ["2", "1"]), 2, 2), [2, 1])
