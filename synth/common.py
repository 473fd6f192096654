"""Pieces shared by the synthesizers of seeds 002 and 003 (``synth.sglt``, ``synth.coloc``).

- model files: a compressed ``.npz`` of named arrays plus a JSON ``meta``
  array holding the method name (``ppmtf``, ``sglt``, ``coloc``), the format
  version, the grid and the slot clock (no pickles); :class:`ModelFrame`, the
  grid and slot clock every model has;
- training traces as days: ``(N, D, T)`` regions per user, day and slot of
  the day, days without any event moved to the end;
- the contest's slots on the model's slots (by clock time).
"""
from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from scoring.grid import Grid
from scoring.traces import Traces

#: ``progress(done, total, message)``: how a long step (training, a set, a round) reports how far it is.
Progress = Callable[[int, int, str], None]


def point_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distances between points ``a`` (..., 2) and ``b`` (..., 2), broadcast against each other,
    in the points' own units (km for the city's ``xy_km``, cells for ``Grid.xy``). Written as two products
    and a sum rather than a sum over the last axis of the squared differences: the same floats, bit for bit,
    about four times quicker (numpy reduces a length-2 axis slowly), which the city's gravity draws over
    every region feel."""
    d0 = a[..., 0] - b[..., 0]
    d1 = a[..., 1] - b[..., 1]
    return np.sqrt(d0 * d0 + d1 * d1)


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


@dataclass(kw_only=True)
class ModelFrame:
    """The grid and the slot clock a synthesizer's model was trained on: what every model (PPMTF, SGLT,
    co-location) keeps besides its own arrays, and what its file's ``meta`` holds with the method and the
    format version (the subclass's ``method`` and ``version``).

    Attributes:
        nx, ny: grid shape; slot_start_minute, slot_minutes: clock of slot 0 and
            length of a slot in minutes (slot t covers ``[start + t*len, start + (t+1)*len)``).
        params: training parameters, JSON-serialisable.
        grid_box: the training grid's box, km factors and hospitals (``Grid`` fields, see
            :func:`grid_box`), or None when trained without a :class:`~scoring.grid.Grid`.
    """

    nx: int
    ny: int
    slot_start_minute: float = 480.0
    slot_minutes: float = 30.0
    params: dict = field(default_factory=dict)
    grid_box: dict | None = None

    @property
    def M(self) -> int:
        """Number of regions (the grid's cells)."""
        return self.nx * self.ny

    def grid(self) -> Grid:
        """The training grid (box and hospitals when known, else the model's shape without hospitals)."""
        return grid_of(self.grid_box) if self.grid_box else Grid(nx=self.nx, ny=self.ny, hospitals=())

    def frame_meta(self) -> dict:
        """The model file's ``meta``: method, version, grid and slot clock (a model adds its own keys)."""
        return dict(method=self.method, version=self.version, nx=self.nx, ny=self.ny,
                    slot_start_minute=self.slot_start_minute, slot_minutes=self.slot_minutes,
                    params=self.params, grid_box=self.grid_box)

    def frame_description(self) -> dict:
        """The start of the model's public description for a manifest: method, version, M, T (the
        subclass's number of slots), grid shape and slot clock (a model adds its own keys)."""
        return dict(method=self.method, version=self.version, M=self.M, T=self.T, nx=self.nx, ny=self.ny,
                    slot_start_minute=self.slot_start_minute, slot_minutes=self.slot_minutes)

    @staticmethod
    def frame_fields(meta: dict) -> dict:
        """Inverse of :meth:`frame_meta`: the frame's constructor arguments read back from a file's ``meta``."""
        return dict(nx=int(meta["nx"]), ny=int(meta["ny"]), slot_start_minute=float(meta["slot_start_minute"]),
                    slot_minutes=float(meta["slot_minutes"]), params=meta["params"], grid_box=meta.get("grid_box"))


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


class ContestDaySynthesizer:
    """What a synthesizer of a trained model (SGLT, co-location) sets up first for the contest's day: its
    options over the method's defaults (``p``), the ``model``, the contest's number of slots ``S`` and the
    model slot each contest slot reads (``mslot``, by clock time: :func:`slot_map`)."""

    def __init__(self, model: ModelFrame, defaults: dict, *, slots: int, slot_start_minute: float,
                 slot_step_minutes: float, params: dict):
        self.p = {**defaults, **params}
        self.model = model
        self.S = int(slots)
        self.mslot = slot_map(model.T, model.slot_start_minute, model.slot_minutes, self.S,
                              slot_start_minute, slot_step_minutes)


def periods_of_slots(T: int, periods: int) -> np.ndarray:
    """(T,) period of each slot of the day: ``periods`` consecutive, near-equal blocks of slots."""
    P = int(periods)
    if not 1 <= P <= T:
        raise ValueError(f"periods must be in [1, {T}] (slots of the day), got {periods}")
    return (np.arange(T) * P // T).astype(np.int64)
