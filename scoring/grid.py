"""The contest grid: regions, their centres, distances and hospitals (rules §2).

Region ids are 1-based at file boundaries only (``r = y*NX + x + 1``, row-major,
origin lower-left). Inside the library a region is its 0-based index
``i = r - 1`` so that it can index numpy arrays directly.
"""
from __future__ import annotations

import csv
import functools
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: The 37 hospital regions of the 2019 contest (1-based region ids).
DEFAULT_HOSPITALS: tuple[int, ...] = (
    2, 43, 50, 147, 150, 152, 174, 183, 186, 205, 237, 296, 303, 326, 331, 344,
    358, 420, 434, 449, 471, 491, 497, 507, 522, 535, 550, 561, 628, 631, 708,
    771, 782, 821, 871, 883, 995,
)

INFO_REGION_HEADER = "reg_id,y_id,x_id,y(center),x(center),hospital"
INFO_TIME_HEADER = "ref/org,time_id,day,hour,min"


@dataclass(frozen=True)
class Grid:
    """An ``nx`` x ``ny`` grid of regions over a latitude/longitude box.

    Distances are Euclidean between region centres in km, with the fixed
    km-per-degree factors ``km_lat`` and ``km_lon`` (not great-circle: the 2019
    programs used this flat approximation and the scores must match them).
    Defaults are the 2019 Tokyo grid (rules §12).
    """

    nx: int = 32
    ny: int = 32
    min_x: float = 139.68   # longitude of the west edge, degrees
    max_x: float = 139.80   # longitude of the east edge, degrees
    min_y: float = 35.65    # latitude of the south edge, degrees
    max_y: float = 35.75    # latitude of the north edge, degrees
    km_lat: float = 111.0   # km per degree of latitude
    km_lon: float = 91.0    # km per degree of longitude
    hospitals: tuple[int, ...] = field(default=DEFAULT_HOSPITALS)  # 1-based ids

    def __post_init__(self):
        if self.nx < 1 or self.ny < 1:
            raise ValueError(f"grid must have at least one region, got {self.nx} x {self.ny}")
        if not (self.max_x > self.min_x and self.max_y > self.min_y):
            raise ValueError("grid box must have max > min on both axes")
        bad = [h for h in self.hospitals if not 1 <= h <= self.nx * self.ny]
        if bad:
            raise ValueError(f"hospital region ids {bad} are outside 1..{self.nx * self.ny}")
        object.__setattr__(self, "hospitals", tuple(sorted(set(int(h) for h in self.hospitals))))

    # ----- geometry -------------------------------------------------------
    @property
    def M(self) -> int:
        """Number of regions."""
        return self.nx * self.ny

    @property
    def cell_width_deg(self) -> float:
        return (self.max_x - self.min_x) / self.nx

    @property
    def cell_height_deg(self) -> float:
        return (self.max_y - self.min_y) / self.ny

    def x_of(self, index):
        """0-based x axis id of 0-based region index/indices."""
        return np.asarray(index) % self.nx

    def y_of(self, index):
        """0-based y axis id of 0-based region index/indices."""
        return np.asarray(index) // self.nx

    def index_of(self, x, y):
        """0-based region index of 0-based axis ids (arrays broadcast)."""
        return np.asarray(y) * self.nx + np.asarray(x)

    @functools.cached_property
    def xy(self) -> np.ndarray:
        """(M, 2) int array of 0-based (x, y) axis ids per region index."""
        idx = np.arange(self.M)
        return np.stack([idx % self.nx, idx // self.nx], axis=1)

    @functools.cached_property
    def centres(self) -> np.ndarray:
        """(M, 2) float64 array of region centres as (lat, lon) in degrees."""
        x, y = self.xy[:, 0], self.xy[:, 1]
        lat = self.min_y + (y + 0.5) * self.cell_height_deg
        lon = self.min_x + (x + 0.5) * self.cell_width_deg
        return np.stack([lat, lon], axis=1)

    @functools.cached_property
    def centres_km(self) -> np.ndarray:
        """(M, 2) float64 centres in km from the box's south-west corner, as (north, east)."""
        c = self.centres
        return np.stack([(c[:, 0] - self.min_y) * self.km_lat,
                         (c[:, 1] - self.min_x) * self.km_lon], axis=1)

    @functools.cached_property
    def distance(self) -> np.ndarray:
        """(M, M) float64 matrix of centre-to-centre distances in km (8 MB at M=1024).

        Computed from degree differences exactly as rules §2 writes it, so that
        rounding matches the 2019 programs.
        """
        c = self.centres
        dlat = (c[:, None, 0] - c[None, :, 0]) * self.km_lat
        dlon = (c[:, None, 1] - c[None, :, 1]) * self.km_lon
        d = np.sqrt(dlat * dlat + dlon * dlon)
        d.setflags(write=False)
        return d

    @functools.cached_property
    def hospital_mask(self) -> np.ndarray:
        """(M,) bool, True at hospital regions (by 0-based index)."""
        mask = np.zeros(self.M, dtype=bool)
        mask[np.asarray(self.hospitals, dtype=np.int64) - 1] = True
        mask.setflags(write=False)
        return mask

    def region_weights(self, hospital_weight: float = 10.0) -> np.ndarray:
        """(M,) float64 trace-inference weight per region: ``hospital_weight`` at hospitals, else 1."""
        return np.where(self.hospital_mask, float(hospital_weight), 1.0)

    def locate(self, lat, lon):
        """0-based region index of the point(s) (lat, lon), clamped to the grid border."""
        x = np.floor((np.asarray(lon, dtype=float) - self.min_x) / self.cell_width_deg)
        y = np.floor((np.asarray(lat, dtype=float) - self.min_y) / self.cell_height_deg)
        x = np.clip(x, 0, self.nx - 1).astype(np.int64)
        y = np.clip(y, 0, self.ny - 1).astype(np.int64)
        return y * self.nx + x

    # ----- info_region.csv ------------------------------------------------
    @classmethod
    def from_info_region(cls, source, km_lat: float = 111.0, km_lon: float = 91.0) -> Grid:
        """Read a grid from an ``info_region.csv`` (path or text).

        The box is recovered from the centres: cell size from the spacing of
        the first and last centres on each axis, edges half a cell outside.
        """
        text = Path(source).read_text(encoding="utf-8-sig") if not isinstance(source, str) or "\n" not in source else source
        rows = list(csv.reader(io.StringIO(text.replace("\r\n", "\n"))))
        if not rows or ",".join(c.strip() for c in rows[0]) != INFO_REGION_HEADER:
            raise ValueError(f"info_region: line 1: expected header {INFO_REGION_HEADER!r}")
        body = [r for r in rows[1:] if r]
        try:
            arr = np.array([[float(v) for v in r[:6]] for r in body])
        except (ValueError, IndexError) as exc:
            raise ValueError(f"info_region: malformed row ({exc})") from None
        reg, yid, xid, yc, xc, hosp = arr.T
        nx, ny = int(xid.max()), int(yid.max())
        if len(body) != nx * ny or not np.array_equal(reg, (yid - 1) * nx + xid):
            raise ValueError("info_region: region ids are not row-major y*NX + x + 1 over a full grid")
        xs, ys = np.unique(xc), np.unique(yc)
        w = (xs[-1] - xs[0]) / (nx - 1) if nx > 1 else 0.0
        h = (ys[-1] - ys[0]) / (ny - 1) if ny > 1 else 0.0
        if w <= 0 or h <= 0:
            raise ValueError("info_region: cannot infer the cell size from the centres")
        return cls(nx=nx, ny=ny, min_x=float(xs[0] - w / 2), max_x=float(xs[-1] + w / 2),
                   min_y=float(ys[0] - h / 2), max_y=float(ys[-1] + h / 2), km_lat=km_lat, km_lon=km_lon,
                   hospitals=tuple(int(r) for r in reg[hosp > 0]))

    def info_region_csv(self) -> str:
        """The grid as ``info_region.csv`` text (1-based y_id, x_id)."""
        out = [INFO_REGION_HEADER]
        c = self.centres
        for i in range(self.M):
            out.append(f"{i + 1},{self.xy[i, 1] + 1},{self.xy[i, 0] + 1},"
                       f"{float(c[i, 0])!r},{float(c[i, 1])!r},{int(self.hospital_mask[i])}")
        return "\n".join(out) + "\n"

    def write_info_region(self, path) -> None:
        Path(path).write_text(self.info_region_csv(), encoding="utf-8")


def slot_of_day(time_ids, slots_per_day: int) -> np.ndarray:
    """0-based slot of the day ``(time_id - 1) % S`` of 1-based time id(s) (rules §3).

    Time ids start at 1 on a day boundary and every day has ``S`` slots, so
    this holds on the reference days and on the original days alike.
    """
    if slots_per_day < 1:
        raise ValueError(f"slots_per_day must be >= 1, got {slots_per_day}")
    return (np.asarray(time_ids, dtype=np.int64) - 1) % slots_per_day


@dataclass(frozen=True)
class TimeAxis:
    """The contest's time slots (rules §3).

    ``slots_per_day`` slots a day starting at ``start_minute`` (minutes after
    midnight) every ``slot_minutes``; ``ref_days`` reference days then
    ``org_days`` original days. ``time_id`` 1..S*Lr are reference slots and
    S*Lr+1..S*(Lr+Lo) original slots. ``day_numbers`` optionally gives the
    calendar day number of each of the Lr+Lo days (the final round sampled
    days sporadically); by default days are numbered 1, 2, ...
    """

    slots_per_day: int = 20
    ref_days: int = 20
    org_days: int = 20
    start_minute: int = 8 * 60
    slot_minutes: int = 30
    day_numbers: tuple[int, ...] | None = None

    @property
    def ref_slots(self) -> int:
        return self.slots_per_day * self.ref_days

    @property
    def org_slots(self) -> int:
        return self.slots_per_day * self.org_days

    def org_time_ids(self) -> np.ndarray:
        """(S*Lo,) int64 time ids of the original slots."""
        return np.arange(self.ref_slots + 1, self.ref_slots + self.org_slots + 1)

    def ref_time_ids(self) -> np.ndarray:
        """(S*Lr,) int64 time ids of the reference slots."""
        return np.arange(1, self.ref_slots + 1)

    def slot_of_day(self, time_ids) -> np.ndarray:
        """0-based slot of the day of 1-based time id(s)."""
        return slot_of_day(time_ids, self.slots_per_day)

    def clock(self, slot_of_day) -> tuple[np.ndarray, np.ndarray]:
        """(hour, minute) of 0-based slot(s) of the day."""
        minutes = self.start_minute + np.asarray(slot_of_day) * self.slot_minutes
        return minutes // 60, minutes % 60

    def info_time_csv(self) -> str:
        days = self.day_numbers or tuple(range(1, self.ref_days + self.org_days + 1))
        if len(days) != self.ref_days + self.org_days:
            raise ValueError("day_numbers must list one number per reference and original day")
        out = [INFO_TIME_HEADER]
        t = 0
        for d, day in enumerate(days):
            kind = "ref" if d < self.ref_days else "org"
            for s in range(self.slots_per_day):
                t += 1
                h, mi = self.clock(s)
                out.append(f"{kind},{t},{day},{int(h)},{int(mi)}")
        return "\n".join(out) + "\n"

    def write_info_time(self, path) -> None:
        Path(path).write_text(self.info_time_csv(), encoding="utf-8")

    @classmethod
    def from_info_time(cls, source) -> TimeAxis:
        """Read an ``info_time.csv`` (path or text) back into a TimeAxis."""
        text = Path(source).read_text(encoding="utf-8-sig") if not isinstance(source, str) or "\n" not in source else source
        rows = [r for r in csv.reader(io.StringIO(text.replace("\r\n", "\n"))) if r]
        if not rows or ",".join(c.strip() for c in rows[0]) != INFO_TIME_HEADER:
            raise ValueError(f"info_time: line 1: expected header {INFO_TIME_HEADER!r}")
        body = rows[1:]
        if not body:
            raise ValueError("info_time: the file has a header but no rows")
        try:
            kinds = [r[0] for r in body]
            days = [int(r[2]) for r in body]
            clock = [int(r[3]) * 60 + int(r[4]) for r in body]
        except (IndexError, ValueError) as exc:
            raise ValueError(f"info_time: malformed row, expected ref/org,time_id,day,hour,min ({exc})") from None
        per_day = []
        for d in days:
            if not per_day or per_day[-1][0] != d:
                per_day.append([d, 0])
            per_day[-1][1] += 1
        S = per_day[0][1]
        n_ref = sum(1 for k in kinds if k == "ref") // S
        n_org = sum(1 for k in kinds if k == "org") // S
        step = clock[1] - clock[0] if S > 1 else 30
        day_numbers = tuple(d for d, _ in per_day)
        default = tuple(range(1, n_ref + n_org + 1))
        return cls(slots_per_day=S, ref_days=n_ref, org_days=n_org, start_minute=clock[0],
                   slot_minutes=step, day_numbers=None if day_numbers == default else day_numbers)
