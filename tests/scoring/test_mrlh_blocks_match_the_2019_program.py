"""A2-MRLH's blocks are the 2019 program's blocks, event for event.

Every event the official MRLH program kept (not ``*``) in the conformance
anotraces must be exactly the block our A2-MRLH gives that event (the
deletions are random, the blocks are not): 0-based axis ids with the low
``mu`` bits dropped.
"""
from __future__ import annotations

import numpy as np
import pytest

from scoring import io as sio
from scoring.algorithms import get


@pytest.mark.parametrize("name, mu, deleted", [("A2-1-1-0.5.csv", 1, 0.5), ("A2-2-2-0.2.csv", 2, 0.2)])
def test_kept_events_are_the_official_blocks(pwscup2019, osaka_grid, name, mu, deleted):
    truth = sio.read_traces(pwscup2019 / "osaka" / "orgtraces_team001_data01_IDP.csv", osaka_grid)
    official = sio.read_anotraces(pwscup2019 / "conformance" / "anotraces" / name, osaka_grid, truth)
    ours = get("A2-MRLH").run(osaka_grid, truth, seed=0, mu_x=mu, mu_y=mu, **{"lambda": 0.0})
    kept = official.events != osaka_grid.M
    text_official = np.array(sio.set_texts(official.sets), dtype=object)[official.events[kept]]
    text_ours = np.array(sio.set_texts(ours.sets), dtype=object)[ours.events[kept]]
    assert (text_official == text_ours).all()
    assert abs((~kept).mean() - deleted) < 0.01       # 80,000 events: 5 sigma < 0.01
