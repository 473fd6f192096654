"""Built-in city model: the default training source of the synthesizer.

A small activity-based simulation of a city on any contest grid, deterministic
given a seed, so that a fresh install can train PPMTF and generate contest data
without any outside data set.

The city (built once per ``CityModel(grid, seed)``):

- **Business hubs.** Where the grid's box covers a known city centre (the 2019
  Tokyo and Osaka boxes), its major stations are the hubs (public coordinates in
  :data:`LANDMARKS`); elsewhere, or in addition, hubs are drawn from the seed
  (the first one near the box centre, a central business district).
- **Density fields over regions** (all (M,) float64, normalised to sum 1):
  business = Gaussian bumps at the hubs; residential = rings around the hubs
  plus a broad background, kept low in hub cores; parks = a few random blobs.
  Every field is multiplied by a seeded log-normal cell texture, because real
  land use is patchy at the scale of one cell.
- **Points of interest** by category (food, shops, offices, schools, parks,
  stations, hospitals), each category sampled from its own mixture of the
  fields; stations are the hubs plus stops along straight "lines" joining
  nearby hubs; the grid's hospital regions are the hospital POIs (one each).

The people (drawn per :meth:`CityModel.simulate` call from its own seed):

- a role: worker, student or other (at home, retired, shift-free);
- a home region ~ residential density;
- a work place ~ business density x exp(-distance / commute_scale) from home
  (a gravity model), a school ~ school POIs with a short decay;
- a lunch place near work and ``n_favourites`` favourite places (leisure POIs
  near home or work), visited with Zipf-like preference;
- personal time habits (leaving time, end of work, lunch-outing and errand
  propensities, outing propensity on days off).

Each day is a plan of up to eight stops (working day: home, work, lunch,
work, business trip, work, errand, home; day off: home, one to five outings
to favourite or new places, home) with travel between them at a finite
speed; earliest-departure times pin the lunch hour and the end of work.
Working days depend on the weekday (weekends are mostly free, a few people
work). Where a person is recorded at a slot:

- at a stop, the stop's position plus a slowly wandering offset (an AR(1)
  walk with pauses, per user, continuous across slots): people walk about,
  and the 2019 people-flow sample records a different region in 84% of
  consecutive 20-minute slots;
- while travelling, a point on the straight line between the two stops,
  often snapped to the nearest station (platforms and trains);
- out of home, sometimes the busiest region of the 3 x 3 block around them.

Units: lengths are fractions of the box scale ``L = sqrt(width_km *
height_km)`` (about 11 km on the Tokyo box), so the same parameters give the
same-looking city on any box; times are minutes after midnight. Defaults were
tuned so that the model's statistics land near the 2019 people-flow sample's
(see ``synth/README.md`` and :mod:`synth.realism`).

Vectorised across users: Python loops run over days, plan stops and slots of the day only.
"""
from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scoring.grid import Grid, TimeAxis
from scoring.io import write_traces
from scoring.traces import Traces
from synth.common import point_distances

#: POI categories, in the order they are generated and numbered.
CATEGORIES: tuple[str, ...] = ("food", "shops", "offices", "schools", "parks", "stations", "hospitals")

#: Major centres used as business hubs when a grid's box covers them:
#: (name, latitude, longitude, relative weight). Public station coordinates;
#: weights are rough relative sizes (ridership order), not fitted to any data.
LANDMARKS: tuple[tuple[str, float, float, float], ...] = (
    # Tokyo (2019 contest grid 35.65-35.75 N, 139.68-139.80 E)
    ("Shinjuku", 35.6896, 139.7006, 1.0),
    ("Tokyo", 35.6812, 139.7671, 1.0),
    ("Shibuya", 35.6580, 139.7016, 0.8),
    ("Ikebukuro", 35.7295, 139.7109, 0.8),
    ("Akihabara", 35.6984, 139.7731, 0.6),
    ("Ueno", 35.7138, 139.7770, 0.6),
    ("Ginza", 35.6717, 139.7640, 0.6),
    ("Shimbashi", 35.6663, 139.7583, 0.5),
    ("Roppongi", 35.6628, 139.7314, 0.4),
    ("Iidabashi", 35.7020, 139.7450, 0.3),
    ("Takadanobaba", 35.7126, 139.7038, 0.3),
    ("Yotsuya", 35.6860, 139.7302, 0.3),
    ("Harajuku", 35.6702, 139.7027, 0.3),
    ("Ikejiri-Ohashi", 35.6505, 139.6843, 0.2),
    # Osaka (2019 practice grid 34.64-34.74 N, 135.44-135.56 E)
    ("Umeda", 34.7025, 135.4959, 1.0),
    ("Namba", 34.6663, 135.5007, 0.8),
    ("Tennoji", 34.6465, 135.5133, 0.6),
    ("Honmachi", 34.6822, 135.4983, 0.6),
    ("Kyobashi", 34.6968, 135.5343, 0.5),
    ("Shin-Osaka", 34.7334, 135.5001, 0.5),
    ("Morinomiya", 34.6806, 135.5335, 0.3),
    ("Bentencho", 34.6694, 135.4617, 0.2),
)

ROLE_WORKER, ROLE_STUDENT, ROLE_OTHER = 0, 1, 2

# Kinds of plan stops, for the roaming radius at a stop.
_HOME, _WORK, _OUT = 0, 1, 2


@dataclass(frozen=True)
class CitySimulation:
    """Result of :meth:`CityModel.simulate_population`.

    Attributes:
        traces: the simulated traces (user ids 1..n, time ids 1..n_days*S, 0-based regions).
        homes: (n,) int64 home region of each user (0-based).
        works: (n,) int64 work or school region (the home region for role "other").
        roles: (n,) int8, ROLE_WORKER / ROLE_STUDENT / ROLE_OTHER.
        favourites: (n, n_favourites) int64 favourite regions, most preferred first.
    """

    traces: Traces
    homes: np.ndarray
    works: np.ndarray
    roles: np.ndarray
    favourites: np.ndarray


#: Stops of a simulated day (:meth:`CityModel._day_plan`), and a clock time after every slot ("not today").
_STOPS = 8
_NEVER = 48 * 60.0


def _calendar(n_days: int, time_axis: TimeAxis | None, slots_per_day: int | None, start_minute: int | None,
              slot_minutes: int | None, first_weekday: int) -> tuple[np.ndarray, np.ndarray]:
    """The slots' clock, (S,) minutes after midnight, and each simulated day's weekday, (n_days,) 0 = Monday
    (see :meth:`CityModel.simulate`): sporadic day numbers of ``time_axis`` shift the weekdays."""
    ta = time_axis or TimeAxis()
    S = int(slots_per_day if slots_per_day is not None else ta.slots_per_day)
    start = int(start_minute if start_minute is not None else ta.start_minute)
    step = int(slot_minutes if slot_minutes is not None else ta.slot_minutes)
    if S < 1 or step < 1:
        raise ValueError(f"slots_per_day and slot_minutes must be positive, got {S} and {step}")
    if time_axis is not None and time_axis.day_numbers and len(time_axis.day_numbers) == n_days:
        day_numbers = np.asarray(time_axis.day_numbers, dtype=np.int64)
    else:
        day_numbers = np.arange(1, n_days + 1)
    return start + step * np.arange(S, dtype=float), (first_weekday + day_numbers - 1) % 7


@dataclass(frozen=True)
class _Places:
    """The regions of each person's life (each (n,), favourites (n, F)), the Zipf CDF over the favourites
    and the leisure attraction of each region, (M,)."""
    roles: np.ndarray
    homes: np.ndarray
    works: np.ndarray
    lunch: np.ndarray
    trip: np.ndarray
    favourites: np.ndarray
    zipf_cdf: np.ndarray
    leisure_attr: np.ndarray

    def zipf_pick(self, rng: np.random.Generator) -> np.ndarray:
        """One favourite of each person, the first ones most often: (n,) regions."""
        n = self.homes.size
        return self.favourites[np.arange(n), np.searchsorted(self.zipf_cdf, rng.random(n), side="right")]


@dataclass(frozen=True)
class _Habits:
    """Each person's habits, each (n,): times in minutes after midnight, the rest probabilities, outings
    per day off, and how much more than others they walk about."""
    leave_mu: np.ndarray
    end_mu: np.ndarray
    p_lunch: np.ndarray
    p_trip: np.ndarray
    p_errand: np.ndarray
    p_out: np.ndarray
    out_mu: np.ndarray
    n_out_mu: np.ndarray
    p_work_weekday: np.ndarray
    p_work_weekend: np.ndarray
    mobility: np.ndarray

    @classmethod
    def draw(cls, rng: np.random.Generator, n: int, roles: np.ndarray) -> _Habits:
        is_w, is_s = roles == ROLE_WORKER, roles == ROLE_STUDENT
        leave_mu = np.where(is_s, rng.uniform(7 * 60 + 10, 8 * 60 + 10, n), rng.uniform(6 * 60 + 50, 9 * 60 + 40, n))
        end_mu = np.where(is_s, rng.uniform(14 * 60 + 30, 17 * 60, n), rng.uniform(17 * 60, 21 * 60, n))
        p_lunch = np.where(is_s, 0.05, rng.uniform(0.1, 0.9, n))
        p_trip = np.where(is_w, rng.uniform(0.0, 0.5, n), 0.0)     # daytime business trip
        p_errand = rng.uniform(0.1, 0.7, n)
        p_out = rng.uniform(0.5, 0.97, n)
        out_mu = rng.uniform(9 * 60, 13 * 60, n)
        n_out_mu = rng.uniform(1.0, 3.5, n)                         # outings per day off
        p_work_weekday = np.where(is_w | is_s, rng.uniform(0.85, 0.98, n), 0.0)
        p_work_weekend = np.where(is_w, rng.uniform(0.0, 0.25, n), 0.0)
        mobility = rng.lognormal(0.0, 0.3, n)   # some people walk about more than others
        return cls(leave_mu, end_mu, p_lunch, p_trip, p_errand, p_out, out_mu, n_out_mu, p_work_weekday,
                   p_work_weekend, mobility)


class CityModel:
    """A synthetic city on ``grid``, deterministic given ``seed``.

    Args:
        grid: the contest grid (default: the 2019 Tokyo grid).
        seed: seed of the city layout (hubs, fields, POIs); simulations draw
            their people from ``(seed, simulate seed)``.
        landmarks: use :data:`LANDMARKS` inside the box as hubs.
        n_random_hubs: hubs drawn from the seed (default: 2 with landmarks in
            the box, else 6).
        hub_sigma: radius of a business hub (fraction of L).
        texture: standard deviation of the log-normal cell-to-cell variation of the fields.
        business_floor: business density away from hubs, relative to the busiest cell.
        residential_background: housing away from the rings around hubs (relative).
        poi_per_region: mean number of POIs per region (hospitals excluded).
        worker_share, student_share: shares of roles (the rest is "other").
        commute_scale: distance decay of the work-place choice (fraction of L).
        speed: travel speed in box scales L per hour (1.8 ~ 20 km/h on Tokyo,
            door to door by train); plus ``travel_overhead`` minutes a trip.
        roam: (home, work, outing, travel) standard deviations of the
            recorded position around the stop (or the travel line), fraction of L.
        pause: probability that a person does not move between two slots.
        roam_memory: autocorrelation of the walk offset from one slot to the next.
        station_share: probability that a travelling person is recorded at the
            nearest station (platforms and trains concentrate people).
        busy_share: probability that a person out of home is recorded in the
            busiest region of the 3 x 3 block around them.
        n_favourites: favourite places per user; ``zipf`` their preference exponent.
        favourite_scale: distance decay of favourite and explored places (fraction of L);
            ``leisure_power`` sharpens their attraction to busy leisure areas.

    Attributes (the layout):
        hub_xy: (H, 2) hub positions in km (north, east) from the south-west corner.
        hub_weight: (H,) relative sizes.
        business, residential, parks: (M,) density fields, each summing to 1.
    """

    def __init__(self, grid: Grid | None = None, seed: int = 0, *, landmarks: bool = True,
                 n_random_hubs: int | None = None, hub_sigma: float = 0.03, texture: float = 0.2,
                 business_floor: float = 0.005, residential_background: float = 0.1,
                 poi_per_region: float = 4.0, worker_share: float = 0.6, student_share: float = 0.12,
                 commute_scale: float = 0.3, speed: float = 1.8, travel_overhead: float = 8.0,
                 roam: tuple[float, float, float, float] = (0.07, 0.09, 0.06, 0.04),
                 roam_memory: float = 0.75, pause: float = 0.12, station_share: float = 0.8,
                 busy_share: float = 0.3, n_favourites: int = 6, zipf: float = 1.0,
                 favourite_scale: float = 0.3, leisure_power: float = 2.0):
        self.grid = grid if grid is not None else Grid()
        self.seed = int(seed)
        if not 0 <= worker_share + student_share <= 1:
            raise ValueError("worker_share + student_share must lie in [0, 1]")
        if n_favourites < 1:
            raise ValueError("n_favourites must be at least 1")
        self.hub_sigma = hub_sigma
        self.poi_per_region = poi_per_region
        self.worker_share = worker_share
        self.student_share = student_share
        self.commute_scale = commute_scale
        self.speed = speed
        self.travel_overhead = travel_overhead
        self.roam = tuple(float(r) for r in roam)
        self.pause = pause
        self.roam_memory = roam_memory
        self.n_favourites = int(n_favourites)
        self.zipf = zipf
        self.residential_background = residential_background
        self.business_floor = business_floor
        self.favourite_scale = favourite_scale
        self.leisure_power = leisure_power
        self.station_share = station_share
        self.busy_share = busy_share
        self.texture = texture

        g = self.grid
        self.width_km = (g.max_x - g.min_x) * g.km_lon
        self.height_km = (g.max_y - g.min_y) * g.km_lat
        self.L = float(np.sqrt(self.width_km * self.height_km))   # box scale, km
        self.xy_km = g.centres_km                                  # (M, 2) (north, east)
        #: Gravity tables over every region (:meth:`_gravity_rows`), by attraction and scale: the same for each
        #: simulation of this city (every ``simulate`` makes its table of places to explore from one).
        self._gravity_tables: dict[tuple[bytes, float], np.ndarray] = {}
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 0xC17]))
        self._build_hubs(rng, landmarks, n_random_hubs)
        self._build_fields(rng)
        self._build_pois(rng)

    # ----- layout -------------------------------------------------------------------
    def _build_hubs(self, rng, landmarks, n_random_hubs):
        g = self.grid
        pts, wts = [], []
        if landmarks:
            for _name, lat, lon, w in LANDMARKS:
                if g.min_y <= lat < g.max_y and g.min_x <= lon < g.max_x:
                    pts.append(((lat - g.min_y) * g.km_lat, (lon - g.min_x) * g.km_lon))
                    wts.append(w)
        n_rand = n_random_hubs if n_random_hubs is not None else (2 if pts else 6)
        if n_rand:
            # Random hubs stay off the border; without landmarks the first is central (a CBD).
            u = rng.uniform(0.15, 0.85, size=(n_rand, 2))
            if not pts:
                u[0] = 0.5 + rng.uniform(-0.08, 0.08, size=2)
            rand_pts = u * np.array([self.height_km, self.width_km])
            rand_w = (0.8 if not pts else 0.3) / np.arange(1, n_rand + 1) ** 0.7
            pts.extend(map(tuple, rand_pts))
            wts.extend(rand_w)
        if not pts:
            raise ValueError("the city needs at least one hub: enable landmarks or n_random_hubs > 0")
        self.hub_xy = np.asarray(pts, dtype=float)
        self.hub_weight = np.asarray(wts, dtype=float)

    def _build_fields(self, rng):
        M = self.grid.M
        d = point_distances(self.xy_km[:, None, :], self.hub_xy[None, :, :])  # (M, H) km
        s = self.hub_sigma * self.L
        bumps = np.exp(-0.5 * (d / s) ** 2)                                  # (M, H)
        core = (bumps * self.hub_weight).sum(1)
        # Rings of housing around each hub, then a broad background everywhere.
        ring_r, ring_w = 0.22 * self.L, 0.12 * self.L
        rings = (np.exp(-0.5 * ((d - ring_r) / ring_w) ** 2) * self.hub_weight).sum(1)
        texture = lambda sigma: rng.lognormal(0.0, sigma, size=M)  # noqa: E731 - tiny local helper
        business = (core + self.business_floor * core.max()) * texture(self.texture)
        residential = ((rings / rings.max() + self.residential_background) * (1.0 - 0.6 * core / core.max())
                       * texture(self.texture))
        n_parks = max(1, int(round(4 * M / 1024)) or 1)
        park_xy = rng.uniform(0.05, 0.95, size=(n_parks, 2)) * np.array([self.height_km, self.width_km])
        dp = point_distances(self.xy_km[:, None, :], park_xy[None])
        parks = np.exp(-0.5 * (dp / (0.05 * self.L)) ** 2).sum(1) + 0.05
        self.business = business / business.sum()
        self.residential = residential / residential.sum()
        self.parks = parks / parks.sum()

    def _build_pois(self, rng):
        g = self.grid
        M = g.M
        mix = {
            "food": 0.65 * self.business + 0.35 * self.residential,
            "shops": 0.5 * self.business + 0.5 * self.residential,
            "offices": self.business,
            "schools": self.residential,
            "parks": self.parks,
        }
        # POIs per category per region, scaled with the grid (about 17 per region in the
        # 2019 POI_TK file; fewer here, the model needs only where they are).
        share = {"food": 0.45, "shops": 0.3, "offices": 0.17, "schools": 0.03, "parks": 0.05}
        regions, cats = [], []
        total = self.poi_per_region * M
        for ci, name in enumerate(CATEGORIES):
            if name in mix:
                n = max(1, int(round(share[name] * total)))
                r = rng.choice(M, size=n, p=mix[name])
            elif name == "stations":
                r = self._station_regions()
            else:  # hospitals: exactly the grid's hospital regions
                r = np.flatnonzero(g.hospital_mask)
            regions.append(np.asarray(r, dtype=np.int64))
            cats.append(np.full(len(r), ci, dtype=np.int8))
        self.poi_region = np.concatenate(regions)
        self.poi_category = np.concatenate(cats)
        n = len(self.poi_region)
        # A point inside its cell, so that POI files carry coordinates like POI_TK.csv.
        frac = rng.uniform(0.0, 1.0, size=(n, 2))
        y = g.y_of(self.poi_region)
        x = g.x_of(self.poi_region)
        self.poi_lat = g.min_y + (y + frac[:, 0]) * g.cell_height_deg
        self.poi_lon = g.min_x + (x + frac[:, 1]) * g.cell_width_deg
        counts = np.zeros((len(CATEGORIES), M))
        np.add.at(counts, (self.poi_category, self.poi_region), 1.0)
        self.poi_counts = counts                       # (C, M) POIs per category per region
        # Busiest region of every 3 x 3 neighbourhood: people out and about drift to busy blocks.
        g = self.grid
        busy = (self.business + self.leisure_density()).reshape(g.ny, g.nx)
        pad = np.pad(busy, 1, constant_values=-1.0)
        cand = np.stack([pad[1 + dy:1 + dy + g.ny, 1 + dx:1 + dx + g.nx]
                         for dy in (-1, 0, 1) for dx in (-1, 0, 1)], axis=-1)       # (ny, nx, 9)
        best = np.argmax(cand, axis=-1)
        yy, xx = np.mgrid[0:g.ny, 0:g.nx]
        self.busiest_neighbour = ((yy + best // 3 - 1) * g.nx + (xx + best % 3 - 1)).ravel()
        # Nearest station of every region: travellers are often recorded at stations.
        st = np.flatnonzero(counts[CATEGORIES.index("stations")] > 0)
        d = point_distances(self.xy_km[:, None, :], self.xy_km[st][None, :, :])
        self.nearest_station = st[np.argmin(d, axis=1)]

    def region_categories(self) -> np.ndarray:
        """(M,) index (in :data:`CATEGORIES`) of each region's most numerous POI category, -1 where it has none."""
        return np.where(self.poi_counts.sum(0) > 0, self.poi_counts.argmax(0), -1)

    def leisure_density(self) -> np.ndarray:
        """(M,) share of the city's leisure POIs (food, shops, parks, stations) in each region."""
        c = self.poi_counts[[CATEGORIES.index(k) for k in ("food", "shops", "parks", "stations")]].sum(0)
        return c / c.sum()

    def _station_regions(self) -> np.ndarray:
        """Stations: every hub, plus stops every ~0.08 L on lines joining each hub to its
        two nearest hubs (straight "rail lines")."""
        hx = self.hub_xy
        stops = [hx]
        if len(hx) > 1:
            d = point_distances(hx[:, None], hx[None])
            np.fill_diagonal(d, np.inf)
            nearest = np.argsort(d, axis=1)[:, :min(2, len(hx) - 1)]
            pairs = {tuple(sorted((i, int(j)))) for i in range(len(hx)) for j in nearest[i]}
            for i, j in sorted(pairs):
                k = max(1, int(d[i, j] / (0.08 * self.L)))
                t = np.arange(1, k)[:, None] / k
                stops.append(hx[i] + t * (hx[j] - hx[i]))
        return np.unique(self._km_to_region(np.concatenate(stops)))

    def _km_to_region(self, p_km: np.ndarray) -> np.ndarray:
        """0-based region of points given in km (north, east) from the south-west corner
        (clamped to the grid, so a displacement past the border stays on the edge)."""
        g = self.grid
        return g.locate(g.min_y + p_km[..., 0] / g.km_lat, g.min_x + p_km[..., 1] / g.km_lon)

    # ----- points of interest ---------------------------------------------------------
    def points_of_interest(self) -> np.ndarray:
        """The city's POIs as a structured array, one row per POI.

        Fields: ``poi_id`` (int64, 0-based), ``region`` (int64, 0-based region
        index), ``category`` (str, one of :data:`CATEGORIES`), ``lat``, ``lon``
        (float64 degrees, inside the region's cell).
        """
        n = len(self.poi_region)
        out = np.empty(n, dtype=[("poi_id", np.int64), ("region", np.int64), ("category", "U9"),
                                 ("lat", np.float64), ("lon", np.float64)])
        out["poi_id"] = np.arange(n)
        out["region"] = self.poi_region
        out["category"] = np.asarray(CATEGORIES)[self.poi_category]
        out["lat"] = self.poi_lat
        out["lon"] = self.poi_lon
        return out

    def write_points_of_interest(self, path) -> None:
        """Write the POIs as CSV ``poi_id,y,x,category,y_id,x_id,2D_id`` (the layout of
        the 2019 ``POI_TK.csv``: y = latitude, x = longitude, 0-based axis and region ids)."""
        pois = self.points_of_interest()
        g = self.grid
        with open(path, "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["poi_id", "y", "x", "category", "y_id", "x_id", "2D_id"])
            ys = g.y_of(pois["region"])
            xs = g.x_of(pois["region"])
            for p, yi, xi in zip(pois, ys, xs):
                w.writerow([int(p["poi_id"]), f"{p['lat']:.8f}", f"{p['lon']:.8f}", p["category"],
                            int(yi), int(xi), int(p["region"])])

    # ----- people -----------------------------------------------------------------------
    def _gravity_choice(self, rng, anchors: np.ndarray, attraction: np.ndarray, scale_km: float) -> np.ndarray:
        """For each anchor region, draw a region with probability proportional to
        ``attraction[r] * exp(-d(anchor, r) / scale_km)``.

        anchors: (n,) int64; attraction: (M,) >= 0. Returns (n,) int64. Works on the
        distinct anchors in chunks (never an n x M or M x M matrix at once for big grids).
        """
        M = self.grid.M
        attraction = np.asarray(attraction, dtype=float) + 1e-12 * attraction.max()
        uniq, inv = np.unique(anchors, return_inverse=True)
        u = rng.random(len(anchors))
        out = np.empty(len(anchors), dtype=np.int64)
        chunk = max(1, (1 << 21) // M)
        for c0 in range(0, len(uniq), chunk):
            rows = uniq[c0:c0 + chunk]
            flat = self._gravity_rows(rows, attraction, scale_km)
            sel = (inv >= c0) & (inv < c0 + len(rows))
            k = inv[sel] - c0
            pos = np.searchsorted(flat, k + u[sel], side="right") - k * M
            out[sel] = np.minimum(pos, M - 1)
        return out

    def _gravity_rows(self, rows: np.ndarray, attraction: np.ndarray, scale_km: float) -> np.ndarray:
        """The gravity CDFs of the anchor regions ``rows`` (r,), row k shifted into (k, k+1] and laid end to
        end: (r * M,), for one searchsorted over all rows. The table over every region is kept (about 8 MB
        on a 32 x 32 grid): a simulation draws its places to explore from all of them."""
        every_region = rows.size == self.grid.M
        key = (attraction.tobytes(), float(scale_km))
        if every_region and key in self._gravity_tables:
            return self._gravity_tables[key]
        d = point_distances(self.xy_km[rows][:, None, :], self.xy_km[None, :, :])
        w = attraction[None, :] * np.exp(-d / scale_km)
        cdf = np.cumsum(w, axis=1)
        cdf /= cdf[:, -1:]
        flat = (cdf + np.arange(len(rows))[:, None]).ravel()
        if every_region:
            if len(self._gravity_tables) >= 4:   # a bound on the memory; a simulation uses one or two
                self._gravity_tables.pop(next(iter(self._gravity_tables)))
            self._gravity_tables[key] = flat
        return flat

    def _travel_minutes(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        d = point_distances(self.xy_km[a], self.xy_km[b])
        return np.where(a == b, 0.0, self.travel_overhead + 60.0 * d / (self.speed * self.L))

    def simulate_population(self, n_users: int, n_days: int, *, time_axis: TimeAxis | None = None,
                            slots_per_day: int | None = None, start_minute: int | None = None,
                            slot_minutes: int | None = None, seed: int | None = None,
                            first_weekday: int = 0) -> CitySimulation:
        """Simulate ``n_users`` people for ``n_days`` days; see :meth:`simulate`.

        The draws come in a fixed order (places, habits, the exploration table, the walk's start, then
        day by day: the plan, the walk, stations and crowds), so a (city seed, ``seed``) pair gives the
        same bytes whatever the helpers below look like."""
        if n_users < 1 or n_days < 1:
            raise ValueError(f"need at least one user and one day, got {n_users} users x {n_days} days")
        clock, weekday = _calendar(n_days, time_axis, slots_per_day, start_minute, slot_minutes, first_weekday)
        S = clock.size
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 0x5EED,
                                                            self.seed if seed is None else int(seed)]))
        n = int(n_users)
        places = self._draw_places(rng, n)
        habits = _Habits.draw(rng, n, places.roles)
        # Somewhere new near a place: 64 draws per region from the same gravity model, made
        # once (one pass over the regions) instead of once per outing.
        explore_table = self._gravity_choice(rng, np.repeat(np.arange(self.grid.M), 64), places.leisure_attr,
                                             self.favourite_scale * self.L).reshape(self.grid.M, 64)
        regions = np.empty((n, n_days * S), dtype=np.int32)
        z = rng.normal(size=(n, 2))   # standardised walk offset of each user
        for day in range(n_days):
            loc, kind, dwell, not_before = self._day_plan(rng, places, habits, explore_table, weekday[day] >= 5)
            arr, dep = self._stop_times(loc, dwell, not_before)
            regions[:, day * S:(day + 1) * S], z = self._day_regions(rng, loc, kind, arr, dep, clock,
                                                                      habits.mobility, z)
        traces = Traces(np.arange(1, n + 1, dtype=np.int64), np.arange(1, n_days * S + 1, dtype=np.int64),
                        regions)
        return CitySimulation(traces, places.homes.astype(np.int64), places.works.astype(np.int64),
                              places.roles, places.favourites)

    def _draw_places(self, rng: np.random.Generator, n: int) -> _Places:
        """Each person's role and the regions of their life: home, work or school, lunch, business trips
        and ``n_favourites`` leisure places (around home, or around work for half of those who work)."""
        M = self.grid.M
        cat = {name: i for i, name in enumerate(CATEGORIES)}
        pc = self.poi_counts
        roles = rng.choice(3, size=n, p=[self.worker_share, self.student_share,
                                         1.0 - self.worker_share - self.student_share]).astype(np.int8)
        homes = rng.choice(M, size=n, p=self.residential)
        work = self._gravity_choice(rng, homes, self.business, self.commute_scale * self.L)
        school_attr = pc[cat["schools"]] + 0.05 * self.residential * pc[cat["schools"]].sum()
        school = self._gravity_choice(rng, homes, school_attr, 0.1 * self.L)
        works = np.where(roles == ROLE_WORKER, work, np.where(roles == ROLE_STUDENT, school, homes))
        lunch = self._gravity_choice(rng, works, pc[cat["food"]] + 1e-3, 0.04 * self.L)
        trip = self._gravity_choice(rng, works, self.business, self.commute_scale * self.L)
        leisure = pc[cat["food"]] + pc[cat["shops"]] + pc[cat["parks"]] + pc[cat["stations"]]
        leisure_attr = leisure ** self.leisure_power + 1e-3
        F = self.n_favourites
        around_work = (rng.random((n, F)) < 0.5) & (roles != ROLE_OTHER)[:, None]
        fav_anchor = np.where(around_work, works[:, None], homes[:, None])
        favourites = self._gravity_choice(rng, fav_anchor.ravel(), leisure_attr,
                                          self.favourite_scale * self.L).reshape(n, F)
        zipf_cdf = np.cumsum(1.0 / np.arange(1, F + 1) ** self.zipf)
        return _Places(roles, homes, works, lunch, trip, favourites, zipf_cdf / zipf_cdf[-1], leisure_attr)

    def _day_plan(self, rng: np.random.Generator, places: _Places, habits: _Habits, explore_table: np.ndarray,
                  weekend: bool) -> tuple[np.ndarray, ...]:
        """One day of everyone as ``K`` stops, each (n, K): location, kind, minimum dwell (minutes) and
        earliest departure (minutes after midnight). A skipped stop repeats the previous location with no
        dwell (no travel). A working day or a day off, by each person's habits."""
        n = places.homes.size
        works_today = rng.random(n) < (habits.p_work_weekend if weekend else habits.p_work_weekday)
        goes_out = ~works_today & (rng.random(n) < habits.p_out)
        w_loc, w_kind, w_dwell, w_nb = self._working_day(rng, places, habits)
        o_loc, o_kind, o_dwell, o_nb = self._day_off(rng, places, habits, explore_table, goes_out)
        wt = works_today[:, None]
        return (np.where(wt, w_loc, o_loc), np.where(wt, w_kind[None, :], o_kind[None, :]),
                np.where(wt, w_dwell, o_dwell), np.where(wt, w_nb, o_nb))

    def _working_day(self, rng: np.random.Generator, places: _Places, habits: _Habits) -> tuple[np.ndarray, ...]:
        """Home, work, lunch, work, business trip, work, errand, home: the stops of :meth:`_day_plan`."""
        n = places.homes.size
        homes, works = places.homes, places.works
        lunch_go = rng.random(n) < habits.p_lunch
        trip_go = rng.random(n) < habits.p_trip
        errand_go = rng.random(n) < habits.p_errand
        lunch_t = 12 * 60 + rng.normal(0, 15, n)
        trip_t = rng.uniform(13 * 60 + 30, 16 * 60, n)
        end_t = habits.end_mu + rng.normal(0, 30, n)
        loc = np.stack([homes, works, np.where(lunch_go, places.lunch, works), works,
                        np.where(trip_go, places.trip, works), works,
                        np.where(errand_go, places.zipf_pick(rng), works), homes], axis=1)
        kind = np.array([_HOME, _WORK, _OUT, _WORK, _WORK, _WORK, _OUT, _HOME], dtype=np.int8)
        dwell = np.stack([np.zeros(n), np.full(n, 30.0), np.where(lunch_go, rng.uniform(30, 55, n), 0),
                          np.zeros(n), np.where(trip_go, rng.uniform(40, 100, n), 0), np.zeros(n),
                          np.where(errand_go, rng.uniform(30, 150, n), 0), np.zeros(n)], axis=1)
        not_before = np.stack([habits.leave_mu + rng.normal(0, 20, n),
                               np.where(lunch_go, lunch_t, -_NEVER), np.full(n, -_NEVER),
                               np.where(trip_go, trip_t, -_NEVER), np.full(n, -_NEVER), end_t,
                               np.full(n, -_NEVER), np.full(n, -_NEVER)], axis=1)
        return loc, kind, dwell, not_before

    def _day_off(self, rng: np.random.Generator, places: _Places, habits: _Habits, explore_table: np.ndarray,
                 goes_out: np.ndarray) -> tuple[np.ndarray, ...]:
        """A day off (or no job): one to five outings, favourites first, sometimes somewhere new; the stops
        of :meth:`_day_plan`. ``goes_out``: (n,) bool, who leaves home at all."""
        n, K = places.homes.size, _STOPS
        n_out = np.where(goes_out, np.minimum(1 + rng.poisson(habits.n_out_mu - 1.0), K - 2), 0)
        loc = [places.homes]
        for k in range(1, K - 1):
            explore = rng.random(n) < 0.3
            new = explore_table[loc[-1], rng.integers(0, explore_table.shape[1], n)]
            loc.append(np.where(k <= n_out, np.where(explore, new, places.zipf_pick(rng)), loc[-1]))
        loc.append(places.homes)
        kind = np.full(K, _OUT, dtype=np.int8)
        kind[[0, K - 1]] = _HOME
        ks = np.arange(K)[None, :]
        dwell = np.where((ks >= 1) & (ks <= n_out[:, None]), rng.uniform(30, 150, (n, K)), 0.0)
        not_before = np.full((n, K), -_NEVER)
        not_before[:, 0] = np.where(goes_out, habits.out_mu + rng.normal(0, 45, n), _NEVER)
        return np.stack(loc, axis=1), kind, dwell, not_before

    def _stop_times(self, loc: np.ndarray, dwell: np.ndarray, not_before: np.ndarray) -> tuple[np.ndarray, ...]:
        """Arrival and departure (minutes after midnight, each (n, K)) at each stop, stop by stop (the loop
        runs over K stops, not users); the last stop is never left."""
        K = loc.shape[1]
        arr = np.empty(loc.shape)
        dep = np.empty(loc.shape)
        arr[:, 0] = -_NEVER
        dep[:, 0] = not_before[:, 0]
        for k in range(1, K):
            arr[:, k] = dep[:, k - 1] + self._travel_minutes(loc[:, k - 1], loc[:, k])
            dep[:, k] = np.maximum(arr[:, k] + dwell[:, k], not_before[:, k])
        dep[:, K - 1] = np.inf
        return arr, dep

    def _day_regions(self, rng: np.random.Generator, loc: np.ndarray, kind: np.ndarray, arr: np.ndarray,
                     dep: np.ndarray, clock: np.ndarray, mobility: np.ndarray,
                     z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where everyone is at each slot of the day, (n, S) regions: at a stop, or on the line between
        two stops, plus the walk around it; some in a station while travelling, some drawn to the
        busiest neighbouring region away from home. ``z`` (n, 2): the walk's offset, carried across
        days; returns the regions and the offset at the day's end."""
        n, K = loc.shape
        S = clock.size
        bounds = np.stack([arr, dep], axis=2).reshape(n, 2 * K)
        seg = (bounds[:, None, :] <= clock[None, :, None]).sum(2)      # (n, S) in 1..2K-1
        stop = seg // 2                                                 # current or next stop
        travelling = (seg % 2) == 0                                     # between dep[k-1] and arr[k]
        r = np.arange(n)[:, None]
        here = self.xy_km[loc[r, stop]]                                 # (n, S, 2)
        prev = self.xy_km[loc[r, np.maximum(stop - 1, 0)]]
        t0 = bounds[r, np.maximum(2 * stop - 1, 0)]
        t1 = bounds[r, 2 * stop]
        frac = np.clip((clock[None, :] - t0) / np.maximum(t1 - t0, 1e-9), 0.0, 1.0)
        pos = np.where(travelling[..., None], prev + frac[..., None] * (here - prev), here)
        roam = np.asarray(self.roam) * self.L                           # km
        sigma = np.where(travelling, roam[3], roam[kind[r, stop]]) * mobility[:, None]
        # The walk around a stop: an AR(1) offset with pauses, continuous across slots
        # (and days), so consecutive slots are near each other yet cover several cells.
        z_day = np.empty((n, S, 2))
        for s_ in range(S):
            pause = rng.random(n) < self.pause
            z_new = self.roam_memory * z + np.sqrt(1.0 - self.roam_memory ** 2) * rng.normal(size=(n, 2))
            z = np.where(pause[:, None], z, z_new)
            z_day[:, s_] = z
        reg = self._km_to_region(pos + z_day * sigma[..., None])
        at_station = travelling & (rng.random((n, S)) < self.station_share)
        reg = np.where(at_station, self.nearest_station[reg], reg)
        drift = (kind[r, stop] != _HOME) & (rng.random((n, S)) < self.busy_share)
        return np.where(drift, self.busiest_neighbour[reg], reg), z

    def simulate(self, n_users: int, n_days: int, *, time_axis: TimeAxis | None = None,
                 slots_per_day: int | None = None, start_minute: int | None = None,
                 slot_minutes: int | None = None, seed: int | None = None, first_weekday: int = 0) -> Traces:
        """Traces of ``n_users`` fresh people of this city over ``n_days`` days.

        The day has ``slots_per_day`` slots from ``start_minute`` (minutes after
        midnight) every ``slot_minutes``; each defaults to ``time_axis``'s value,
        then to the contest's (20 half-hour slots from 8:00). Day ``d`` (0-based)
        is weekday ``(first_weekday + day_number - 1) % 7`` (0 = Monday, 5 and 6
        the weekend), with day numbers from ``time_axis.day_numbers`` when it
        lists ``n_days`` of them, else 1..n_days.

        Returns :class:`~scoring.traces.Traces` with user ids 1..n_users, time ids
        1..n_days*S and 0-based regions. Same (city seed, ``seed``), same traces.
        """
        return self.simulate_population(n_users, n_days, time_axis=time_axis, slots_per_day=slots_per_day,
                                        start_minute=start_minute, slot_minutes=slot_minutes, seed=seed,
                                        first_weekday=first_weekday).traces


@functools.lru_cache(maxsize=4)
def city_model(grid: Grid, seed: int) -> CityModel:
    """``CityModel(grid, seed)`` with its default parameters, built once per process and shared (a model is
    never changed once built): a round's data sets and their figures are drawn from one city, which
    took 0.1 s to build and its gravity tables 30 ms each time."""
    return CityModel(grid, seed=seed)


def write_city(out_dir, grid: Grid | None = None, n_users: int = 1000, n_days: int = 40, seed: int = 0,
               *, time_axis: TimeAxis | None = None) -> dict[str, Path]:
    """Simulate the built-in city and write a training set into ``out_dir``.

    Files: ``traintraces.csv`` (rules §5 trace format ``user_id,time_id,reg_id``,
    1-based region ids), ``pois.csv`` (see :meth:`CityModel.write_points_of_interest`),
    ``info_region.csv`` and ``info_time.csv`` (all days listed as ``ref`` days:
    training traces have no reference/original split). Returns the paths by name.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    grid = grid if grid is not None else Grid()
    model = CityModel(grid, seed)
    ta = time_axis or TimeAxis()
    traces = model.simulate(n_users, n_days, time_axis=ta, seed=seed)
    axis = TimeAxis(slots_per_day=ta.slots_per_day, ref_days=n_days, org_days=0,
                    start_minute=ta.start_minute, slot_minutes=ta.slot_minutes,
                    day_numbers=ta.day_numbers if ta.day_numbers and len(ta.day_numbers) == n_days else None)
    paths = {"traintraces": out / "traintraces.csv", "pois": out / "pois.csv",
             "info_region": out / "info_region.csv", "info_time": out / "info_time.csv"}
    write_traces(traces, paths["traintraces"])
    model.write_points_of_interest(paths["pois"])
    grid.write_info_region(paths["info_region"])
    axis.write_info_time(paths["info_time"])
    return paths

