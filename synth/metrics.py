"""Realism metrics of synthetic traces (paper Appendix B, PPMTF.md section 6).

Each metric compares real traces (training or held-out test traces) with
synthetic ones; lower is better for the distances. They are the figures of
the PPMTF evaluation (``EvalUtilPriv.py`` of the PPMTF repository, paper
Appendix B) on the contest grid:

- **TP-TV**: time-dependent population distribution, full L1 over regions
  per slot of the day, averaged over slots (the code's "TV" has no 1/2).
- **TP-TV-Top50**: the same restricted to the 50 regions most visited in the
  real traces at each slot (rules §13).
- **TM-EMD**: sliced 1-Wasserstein distance between rows of the pooled
  transition matrices on grid coordinates, averaged over all rows (rules §13).
- **VF-TV**: distribution of visit-fractions. For each user with at least
  ``min_events`` events, the fraction of her events spent in each region;
  for each region, the histogram over users of those fractions in ``bins``
  equal bins ``(0, 1/B], (1/B, 2/B], ...`` -- fractions 0 (not visited) and 1
  (never anywhere else) are left out, as in the reference code. VF-TV is the
  L1 between the real and the synthetic histogram (each normalised to sum 1)
  of a region, averaged over the regions whose real histogram is non-empty;
  a region whose synthetic histogram is empty counts as all mass in the
  first bin (the reference code's convention). B = 24 as the paper writes
  (the reference code uses 30 for the people-flow data).
- **Diversity** (Same-TV vs Diff-TV): per-user population distributions
  (normalised visit counts over regions); Same-TV is the mean L1 between
  user i of team 1 and user i of team 2, Diff-TV between user i of team 1
  and user h+i of team 2 (h = half the users), i < h -- the paper's
  "i-th vs (1000+i)-th user" with 2000 users. A synthesizer has diversity
  when Same-TV is not smaller than Diff-TV (within 0.1 standard deviation).
- **Home-stay probability** per slot of the day: the share of (user, day)
  pairs at the user's home region at that slot.

TP-TV, TP-TV-Top50 and TM-EMD are the rules §13 analyses of
:mod:`scoring.analyses` (one concept, one place); this module adds the
synthesizer-only metrics and :func:`compute_all` for ``python -m synth metrics``.

Shapes: traces are :class:`~scoring.traces.Traces` ((m, L) 0-based regions);
slots of the day are ``(time_id - 1) % slots_per_day``.
"""
from __future__ import annotations

import numpy as np

from scoring import analyses
from scoring.grid import Grid
from scoring.traces import Traces

#: Number of visit-fraction bins in the paper (Appendix B).
VF_BINS = 24
#: Users with fewer events are left out of the visit-fraction histograms (reference code).
VF_MIN_EVENTS = 5


def tp_tv(grid: Grid, real: Traces, synthetic: Traces, slots_per_day: int) -> float:
    """TP-TV: mean over the real traces' slots of ``sum_r |p_real(s, r) - p_syn(s, r)|``."""
    return analyses.tp_tv(grid, real, synthetic, slots_per_day)


def tp_tv_top50(grid: Grid, real: Traces, synthetic: Traces, slots_per_day: int, top: int = 50) -> float:
    """TP-TV-Top50 (rules §13): the TP-TV sum over each slot's ``top`` most visited real regions."""
    return analyses.tp_tv_top50(grid, real, synthetic, slots_per_day, top)


def tm_emd(grid: Grid, real: Traces, synthetic: Traces, slots_per_day: int,
           n_projections: int = 50, seed: int = 0) -> float:
    """TM-EMD (rules §13): mean sliced W1 between transition-matrix rows, in grid units."""
    return analyses.tm_emd(grid, real, synthetic, slots_per_day, n_projections, seed)


def visit_fractions(traces: Traces, M: int) -> np.ndarray:
    """(m, M) float64: share of each user's events in each region (rows sum to 1)."""
    m, L = traces.regions.shape
    if L == 0:
        return np.zeros((m, M))
    key = (np.arange(m, dtype=np.int64)[:, None] * M + traces.regions).ravel()
    return np.bincount(key, minlength=m * M).reshape(m, M) / L


def visit_fraction_histograms(traces: Traces, M: int, bins: int = VF_BINS,
                              min_events: int = VF_MIN_EVENTS) -> np.ndarray:
    """(M, bins) float64 counts: for region r, how many users spend a fraction in bin b of their events there.

    Bin b holds fractions in ``(b/B, (b+1)/B]``; fractions 0 and 1 are not
    counted; users with fewer than ``min_events`` events are skipped.
    """
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    hist = np.zeros((M, bins))
    if traces.L < min_events or traces.m == 0:
        return hist
    vf = visit_fractions(traces, M)
    user, region = np.nonzero((vf > 0) & (vf < 1))
    f = vf[user, region]
    b = np.ceil(f * bins - 1e-12).astype(np.int64) - 1   # (b/B, (b+1)/B] -> b; guard exact multiples
    np.add.at(hist, (region, np.clip(b, 0, bins - 1)), 1.0)
    return hist


def vf_tv(grid: Grid, real: Traces, synthetic: Traces, bins: int = VF_BINS,
          min_events: int = VF_MIN_EVENTS) -> float:
    """VF-TV: mean over regions with a real histogram of the L1 between normalised histograms.

    Returns NaN if no region has a real histogram (e.g. every real user stays in one region).
    """
    M = grid.M
    h_real = visit_fraction_histograms(real, M, bins, min_events)
    h_syn = visit_fraction_histograms(synthetic, M, bins, min_events)
    n_real = h_real.sum(1, keepdims=True)
    n_syn = h_syn.sum(1, keepdims=True)
    keep = n_real[:, 0] > 0
    if not keep.any():
        return float("nan")
    p = h_real[keep] / n_real[keep]
    q = np.divide(h_syn[keep], n_syn[keep], out=np.zeros_like(p), where=n_syn[keep] > 0)
    q[n_syn[keep][:, 0] == 0, 0] = 1.0
    return float(np.abs(p - q).sum(1).mean())


def user_population(traces: Traces, M: int) -> np.ndarray:
    """(m, M) per-user population distribution (visit counts over regions, normalised)."""
    return visit_fractions(traces, M)


def diversity(grid: Grid, team1: Traces, team2: Traces) -> dict:
    """Same-TV vs Diff-TV of two teams' synthetic users (paper Appendix B).

    Users are paired by position: with ``h = min(m1, m2) // 2``, Same pairs
    team-1 user i with team-2 user i, Diff pairs team-1 user i with team-2
    user h+i, for i < h.

    Returns:
        ``{"same_tv", "diff_tv", "same_std", "diff_std", "pairs"}``: mean and
        standard deviation of the per-pair L1 distances, and h.
    """
    h = min(team1.m, team2.m) // 2
    if h < 1:
        raise ValueError("diversity needs at least two users in each team")
    p1 = user_population(team1, grid.M)[:h]
    p2 = user_population(team2, grid.M)
    same = np.abs(p1 - p2[:h]).sum(1)
    diff = np.abs(p1 - p2[h:2 * h]).sum(1)
    return {"same_tv": float(same.mean()), "diff_tv": float(diff.mean()),
            "same_std": float(same.std()), "diff_std": float(diff.std()), "pairs": int(h)}


def estimate_homes(traces: Traces, slots_per_day: int) -> np.ndarray:
    """(m,) int64 home region of each user, estimated as the region she is most often in
    at the first and the last slot of the day (ties: lowest region index)."""
    slot = (np.asarray(traces.time_ids, dtype=np.int64) - 1) % slots_per_day
    cols = np.flatnonzero((slot == 0) | (slot == slots_per_day - 1))
    if cols.size == 0:
        cols = np.arange(traces.L)
    m = traces.m
    M = int(traces.regions.max()) + 1 if traces.regions.size else 1
    key = np.repeat(np.arange(m, dtype=np.int64), cols.size) * M + traces.regions[:, cols].ravel()
    counts = np.bincount(key, minlength=m * M).reshape(m, M)
    return np.argmax(counts, axis=1).astype(np.int64)


def home_stay(traces: Traces, homes, slots_per_day: int) -> np.ndarray:
    """(S,) float64: per slot of the day, the share of events at the user's home region.

    ``homes`` is (m,) 0-based home regions in the traces' user order. A slot
    of the day absent from the traces gets NaN.
    """
    homes = np.asarray(homes, dtype=np.int64)
    if homes.shape != (traces.m,):
        raise ValueError(f"homes must give one region per user: shape {homes.shape}, expected ({traces.m},)")
    slot = (np.asarray(traces.time_ids, dtype=np.int64) - 1) % slots_per_day
    at_home = (traces.regions == homes[:, None]).sum(0)              # (L,) users at home per time id
    num = np.bincount(slot, weights=at_home, minlength=slots_per_day)
    den = np.bincount(slot, minlength=slots_per_day) * traces.m
    return np.divide(num, den, out=np.full(slots_per_day, np.nan), where=den > 0)


def compute_all(real: Traces, synthetic: Traces, grid: Grid, slots_per_day: int, homes=None, *,
                other_team: Traces | None = None, vf_bins: int = VF_BINS) -> dict:
    """Every realism metric of ``synthetic`` against ``real``, as a JSON-ready dict.

    Args:
        real: real (training or test) traces; synthetic: the synthetic traces.
        grid: the contest grid; slots_per_day: S (both sets use the same day).
        homes: (m_syn,) home regions of the synthetic users (e.g. PPMTF+'s
            drawn homes); estimated with :func:`estimate_homes` if None.
        other_team: a second team's synthetic traces for the diversity check.

    Returns:
        ``tp_tv``, ``tp_tv_top50``, ``tm_emd``, ``vf_tv`` (floats),
        ``home_stay`` (list of S floats, synthetic users at their homes),
        ``home_stay_real`` (real users at their estimated homes), and
        ``diversity`` (dict, or None without ``other_team``).
    """
    if homes is None:
        homes = estimate_homes(synthetic, slots_per_day)
    return {
        "tp_tv": tp_tv(grid, real, synthetic, slots_per_day),
        "tp_tv_top50": tp_tv_top50(grid, real, synthetic, slots_per_day),
        "tm_emd": tm_emd(grid, real, synthetic, slots_per_day),
        "vf_tv": vf_tv(grid, real, synthetic, bins=vf_bins),
        "home_stay": home_stay(synthetic, homes, slots_per_day).tolist(),
        "home_stay_real": home_stay(real, estimate_homes(real, slots_per_day), slots_per_day).tolist(),
        "diversity": None if other_team is None else diversity(grid, synthetic, other_team),
    }
