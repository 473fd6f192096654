"""Pieces shared by the synthesizers of seeds 002 and 003 (``synth.sglt``, ``synth.coloc``).

- model files: a compressed ``.npz`` of named arrays plus a JSON ``meta``
  array holding the method name (``ppmtf``, ``sglt``, ``coloc``), the format
  version, the grid and the slot clock (no pickles);
- training traces as days: ``(N, D, T)`` regions per user, day and slot of
  the day, days without any event moved to the end;
- the contest's slots on the model's slots (by clock time).
"""
from __future__ import annotations

import io
import json
from collections.abc import Callable

import numpy as np

from scoring.grid import Grid
from scoring.traces import Traces

#: ``progress(done, total, message)``: how a long step (training, a set, a round) reports how far it is.
Progress = Callable[[int, int, str], None]


def no_progress(done: int, total: int, message: str) -> None:
    """The :data:`Progress` of a caller that does not watch."""
    return None


def grid_box(grid: Grid) -> dict:
    """The grid's fields as a JSON-serialisable dict (``Grid(**box)`` rebuilds it)."""
    return dict(nx=grid.nx, ny=grid.ny, min_x=grid.min_x, max_x=grid.max_x, min_y=grid.min_y,
                max_y=grid.max_y, km_lat=grid.km_lat, km_lon=grid.km_lon, hospitals=list(grid.hospitals))


def grid_of(box: dict) -> Grid:
    """Inverse of :func:`grid_box`."""
    return Grid(**{**box, "hospitals": tuple(box["hospitals"])})


def save_npz(dest, meta: dict, arrays: dict) -> None:
    """Write ``arrays`` and the JSON ``meta`` (must hold ``method`` and ``version``) as a compressed npz."""
    if "method" not in meta or "version" not in meta:
        raise ValueError("model meta needs 'method' and 'version'")
    np.savez_compressed(dest, **arrays,
                        meta=np.frombuffer(json.dumps(meta, sort_keys=True).encode(), np.uint8))


def read_npz(source, method: str, version: str, names) -> tuple[dict, dict]:
    """(meta, arrays) of a model file written by :func:`save_npz`, checking method and version."""
    if isinstance(source, (bytes, bytearray)):
        source = io.BytesIO(source)
    with np.load(source, allow_pickle=False) as z:
        try:
            meta = json.loads(z["meta"].tobytes().decode())
            arrays = {k: z[k] for k in names}
        except KeyError as exc:
            raise ValueError(f"not a {method} model file: missing {exc}") from None
    if meta.get("method") != method or meta.get("version") != version:
        raise ValueError(f"model file is {meta.get('method')!r} version {meta.get('version')!r}, "
                         f"expected {method!r} version {version!r}")
    return meta, arrays


def model_method(source) -> str:
    """The method stored in a model file (files from before the method key are PPMTF models)."""
    if isinstance(source, (bytes, bytearray)):
        source = io.BytesIO(source)
    with np.load(source, allow_pickle=False) as z:
        if "meta" not in z.files:
            raise ValueError("not a synthesizer model file: no 'meta' entry")
        meta = json.loads(z["meta"].tobytes().decode())
    if hasattr(source, "seek"):
        source.seek(0)
    return str(meta.get("method", "ppmtf"))


def as_days(traces: Traces, slots_per_day: int) -> tuple[np.ndarray, np.ndarray]:
    """Training traces as days.

    Time id t is slot ``(t-1) % T`` of day ``(t-1) // T``.

    Returns:
        days (N, D, T) int32 region or -1 (no event), each user's days with at
        least one event first (in calendar order), and n_days (N,) int64 the
        number of such days per user.
    """
    T = int(slots_per_day)
    if T < 1:
        raise ValueError(f"slots_per_day must be >= 1, got {slots_per_day}")
    tid = np.asarray(traces.time_ids, dtype=np.int64)
    if len(tid) == 0:
        raise ValueError("training traces have no time ids")
    if tid.min() < 1:
        raise ValueError(f"time ids must be >= 1, got {tid.min()}")
    day, slot = (tid - 1) // T, (tid - 1) % T
    uday, dcol = np.unique(day, return_inverse=True)
    N = traces.m
    full = np.full((N, len(uday), T), -1, dtype=np.int32)
    full[:, dcol, slot] = np.asarray(traces.regions)
    has = (full >= 0).any(axis=2)                                   # (N, D)
    order = np.argsort(~has, axis=1, kind="stable")                 # days with events first
    days = np.take_along_axis(full, order[:, :, None], axis=1)
    return days, has.sum(axis=1).astype(np.int64)


def slot_map(model_slots: int, model_start: float, model_minutes: float, slots: int,
             start_minute: float, step_minutes: float) -> np.ndarray:
    """(slots,) model slot of each contest slot: the model slot whose clock span holds the contest slot's start.

    Contest slots before the model's day map to its first slot, after it to its last.
    """
    clock = start_minute + np.arange(int(slots)) * step_minutes
    k = np.floor((clock - model_start) / model_minutes + 1e-9).astype(np.int64)
    return np.clip(k, 0, int(model_slots) - 1)


def periods_of_slots(T: int, periods: int) -> np.ndarray:
    """(T,) period of each slot of the day: ``periods`` consecutive, near-equal blocks of slots."""
    P = int(periods)
    if not 1 <= P <= T:
        raise ValueError(f"periods must be in [1, {T}] (slots of the day), got {periods}")
    return (np.arange(T) * P // T).astype(np.int64)
