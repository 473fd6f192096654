"""How the built-in city model compares with the 2019 people-flow sample.

The sample (``../shared/data/pwscup2019/peopleflow``) holds 1000 training and
1000 test users x 35 slots on the Tokyo 32 x 32 grid. Its readme does not give
the clock times; the PPMTF preprocessing of the same people-flow data samples
one day per user every 20 minutes from 9:00, on Mondays and Sundays, so the
model is compared on that axis: 35 slots of 20 minutes from 9:00, each
simulated user on a Monday (even rows) or a Sunday (odd rows).

Statistics (:func:`trace_stats`, :func:`compare`):

- population L1 against the sample's training half: ``pop_l1`` over the
  overall distribution over regions (all slots pooled), ``pop_l1_slot`` per
  slot averaged (TP-TV, :func:`synth.metrics.tp_tv`), ``pop_l1_4x4`` over
  4 x 4-cell blocks (the shape of the city without the cell-level noise);
- distinct regions per user per 35 consecutive slots (mean, median);
- share of a user's 35 slots spent in her most visited region (mean, median);
- ``stay``: probability that two consecutive slots are in the same region.

Rows: the sample's own test half (the noise floor: two samples of the same
population), the city model, the city model on the contest's day (20
half-hour slots from 8:00; its windows of 35 slots span two days; no
per-slot comparison), and uniformly random regions (the baseline).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scoring.grid import Grid, TimeAxis
from scoring.io import read_traces
from scoring.traces import Traces
from synth import metrics
from synth.city import CityModel

#: Time axis assumed for the people-flow sample (see the module docstring).
SAMPLE_AXIS = TimeAxis(slots_per_day=35, ref_days=2, org_days=0, start_minute=9 * 60,
                       slot_minutes=20, day_numbers=(1, 7))
WINDOW = 35


def load_peopleflow(folder, grid: Grid | None = None) -> tuple[Traces, Traces]:
    """(train, test) traces of the people-flow sample in ``folder``."""
    folder = Path(folder)
    grid = grid or Grid()
    return (read_traces(folder / "traintraces_TK.csv", grid),
            read_traces(folder / "testtraces_TK.csv", grid))


def _windows(traces: Traces, window: int) -> np.ndarray:
    """(m * k, window) regions of the k = L // window consecutive windows of every user."""
    k = traces.L // window
    if k == 0:
        raise ValueError(f"traces have {traces.L} time ids, fewer than a window of {window}")
    return traces.regions[:, :k * window].reshape(traces.m * k, window).astype(np.int64)


def trace_stats(traces: Traces, M: int, window: int = WINDOW) -> dict:
    """Per-user mobility statistics over windows of ``window`` consecutive slots.

    Returns ``distinct_mean``, ``distinct_median`` (distinct regions per
    window), ``top_share_mean``, ``top_share_median`` (share of the window in
    its most visited region) and ``stay`` (consecutive slots in one region).
    """
    w = _windows(traces, window)
    s = np.sort(w, axis=1)
    distinct = 1 + (np.diff(s, axis=1) != 0).sum(1)
    n = len(w)
    counts = np.bincount((np.arange(n)[:, None] * M + w).ravel(), minlength=n * M).reshape(n, M)
    top = counts.max(1) / window
    r = traces.regions
    return {"distinct_mean": float(distinct.mean()), "distinct_median": float(np.median(distinct)),
            "top_share_mean": float(top.mean()), "top_share_median": float(np.median(top)),
            "stay": float((r[:, 1:] == r[:, :-1]).mean())}


def overall_population(traces: Traces, M: int) -> np.ndarray:
    """(M,) distribution of all events over regions."""
    return np.bincount(traces.regions.ravel(), minlength=M) / traces.regions.size


def block_population(p: np.ndarray, grid: Grid, block: int = 4) -> np.ndarray:
    """Region distribution ``p`` (M,) summed over ``block`` x ``block`` cell blocks."""
    x, y = grid.xy[:, 0] // block, grid.xy[:, 1] // block
    nbx = -(-grid.nx // block)
    return np.bincount(y * nbx + x, weights=p, minlength=nbx * (-(-grid.ny // block)))


def uniform_traces(grid: Grid, like: Traces, seed: int = 0) -> Traces:
    """Traces of ``like``'s shape with independent uniformly random regions."""
    rng = np.random.default_rng(seed)
    return Traces(like.user_ids, like.time_ids,
                  rng.integers(0, grid.M, size=like.regions.shape, dtype=np.int32))


def city_on_sample_axis(model: CityModel, n_users: int, seed: int) -> Traces:
    """The model's ``n_users`` on the sample's axis: one 35-slot day each, Monday or Sunday."""
    sim = model.simulate(n_users, 2, time_axis=SAMPLE_AXIS, seed=seed)
    S = SAMPLE_AXIS.slots_per_day
    day = np.arange(n_users) % 2                                   # 0: Monday, 1: Sunday
    cols = day[:, None] * S + np.arange(S)[None, :]
    return Traces(sim.user_ids, np.arange(1, S + 1, dtype=np.int64),
                  np.take_along_axis(sim.regions, cols, axis=1))


@dataclass(frozen=True)
class RealismTable:
    """Rows of :func:`compare`: one dict per data set (``name`` plus the statistics)."""

    rows: list

    def row(self, name: str) -> dict:
        for r in self.rows:
            if r["name"] == name:
                return r
        raise KeyError(name)

    def to_text(self) -> str:
        """A Markdown table."""
        cols = ["pop_l1", "pop_l1_slot", "pop_l1_4x4", "distinct_mean", "distinct_median",
                "top_share_mean", "top_share_median", "stay"]
        out = ["| data | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for r in self.rows:
            cells = []
            for c in cols:
                v = r.get(c)
                cells.append("-" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.3f}")
            out.append(f"| {r['name']} | " + " | ".join(cells) + " |")
        return "\n".join(out)


def compare(folder, *, seed: int = 0, grid: Grid | None = None, model: CityModel | None = None) -> RealismTable:
    """Compare the city model (and baselines) with the people-flow sample in ``folder``.

    The model simulates as many users as the sample's training half on the
    sample's axis (:data:`SAMPLE_AXIS`). Distances are to the training half.
    """
    grid = grid or Grid()
    M = grid.M
    train, test = load_peopleflow(folder, grid)
    S = train.L
    model = model or CityModel(grid, seed)
    city = city_on_sample_axis(model, train.m, seed)
    contest = model.simulate(train.m, 2, seed=seed)                   # 2 x 20 half-hour slots
    uniform = uniform_traces(grid, train, seed)
    p_train = overall_population(train, M)

    def row(name, traces, per_slot=True):
        p = overall_population(traces, M)
        r = {"name": name,
             "pop_l1": float(np.abs(p - p_train).sum()),
             "pop_l1_slot": metrics.tp_tv(grid, train, traces, S) if per_slot else float("nan"),
             "pop_l1_4x4": float(np.abs(block_population(p, grid) - block_population(p_train, grid)).sum())}
        r.update(trace_stats(traces, M))
        return r

    return RealismTable([
        row("people-flow train (reference)", train),
        row("people-flow test (noise floor)", test),
        row("city model", city),
        row("city model, contest day (8:00-17:30)", contest, per_slot=False),
        row("uniform random", uniform),
    ])


if __name__ == "__main__":  # pragma: no cover - a convenience for the README numbers
    import sys
    here = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "pwscup2019" / "peopleflow"
    print(compare(sys.argv[1] if len(sys.argv) > 1 else here).to_text())
