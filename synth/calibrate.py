"""Does generated contest data play like 2019? Statistics and sample-attack scores beside the 2019 data.

``python -m synth calibrate`` generates one contest-size set (default 2000
users, 2 reference + 2 original days like the 2019 Osaka practice set) and
prints, for it and for the 2019 Osaka set (``../shared/data/pwscup2019/osaka``
when present):

- **first = last**: share of user-days whose first and last slot are the
  same region (the home signal at both ends of the day);
- **home share by slot**: share of users at their home region at each slot
  of the day, home estimated the same way on both sides
  (:func:`synth.metrics.estimate_homes`: the region most often seen at the
  first and last slot);
- **regions per day**: mean number of distinct regions in a user-day;
- **stay**: share of consecutive slot pairs of a day in the same region;
- **attacks**: s_I of I1-I3 and s_T of T1-T3 (the six judge attacks, exact
  mode) on three anonymizers: A1 (none), A3-kRR(8), A4-PL(4,1); each
  anonymized set is pseudonymized and attacked with the reference traces as
  the judge does.

Targets: every attack score within 0.05 of the 2019 value on the
same anonymizer, the first = last share within 5 points. Everything is
deterministic given the seed.
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from scoring.algorithms.registry import get
from scoring.grid import Grid, TimeAxis
from scoring.io import read_traces
from scoring.pseudonymize import pseudonymize
from scoring.scores import reidentification, trace_inference
from scoring.traces import Traces
from scoring.vocabulary import Challenge
from synth.methods import load_model, make_synthesizer
from synth.metrics import estimate_homes, home_stay
from synth.ppmtf_plus import CONTEST_DEFAULTS, train_contest_model

#: (label, registered anonymizer, parameters) compared against 2019.
ANONYMIZERS = (
    ("A1", "A1-none", {}),
    ("A3-kRR(8)", "A3-kRR", {"eps": 8.0}),
    ("A4-PL(4,1)", "A4-PL", {"l": 4.0, "r": 1.0}),
)
ATTACKS = ("I1-rand", "I2-VisitProb", "I3-HomeProb", "T1-rand", "T2-VisitProb", "T3-HomeProb")
#: The calibration's targets (above).
SCORE_TOLERANCE = 0.05
FIRST_LAST_TOLERANCE = 0.05


def _seed(seed: int, *words: str) -> int:
    text = ":".join([str(seed), *words])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def _days(traces: Traces, slots_per_day: int) -> np.ndarray:
    """(m * days, S) regions of every user-day (time ids must be whole days)."""
    m, L = traces.regions.shape
    if L % slots_per_day:
        raise ValueError(f"{L} time ids are not a whole number of {slots_per_day}-slot days")
    return traces.regions.reshape(m * (L // slots_per_day), slots_per_day)


def day_statistics(reference: Traces, original: Traces, slots_per_day: int) -> dict:
    """Home and movement statistics of a set's user-days (R and O together).

    Returns:
        ``first_last`` (float, share of user-days with slot 0 == slot S-1),
        ``home_share`` (list of S floats), ``regions_per_day`` (float),
        ``stay`` (float, share of consecutive same-region slot pairs within a day).
    """
    both = Traces(reference.user_ids, np.concatenate([reference.time_ids, original.time_ids]),
                  np.concatenate([reference.regions, original.regions], axis=1))
    days = _days(both, slots_per_day)
    first_last = float(np.mean(days[:, 0] == days[:, -1]))
    srt = np.sort(days, axis=1)
    regions_per_day = float(np.mean(1 + (np.diff(srt, axis=1) != 0).sum(axis=1)))
    stay = float(np.mean(days[:, 1:] == days[:, :-1]))
    home = home_stay(both, estimate_homes(both, slots_per_day), slots_per_day)
    return dict(first_last=first_last, home_share=[float(x) for x in home],
                regions_per_day=regions_per_day, stay=stay)


def attack_scores(grid: Grid, reference: Traces, original: Traces, *, seed: int = 0,
                  anonymizers=ANONYMIZERS, attacks=ATTACKS, axis=None) -> dict:
    """{anonymizer label: {attack name: s_I or s_T}} of the judge attacks (exact mode).

    Args:
        axis: the sets' :class:`~scoring.grid.TimeAxis` (for HomeProb's slots); the
            2019 axis if None.
    """
    out = {}
    for label, name, params in anonymizers:
        alg = get(name)
        anon = alg.run(grid, original, seed=_seed(seed, label, "anonymize"), **params)
        pse = pseudonymize(anon, seed=_seed(seed, label, "pseudonymize"))
        row = {}
        for attack_name in attacks:
            attack = get(attack_name)
            extra = attack.axis_params(axis) if axis is not None else {}
            est = attack.run(grid, reference, pse.pubtraces, seed=_seed(seed, label, attack_name), **extra)
            if attack.kind == "reidentification":
                row[attack_name] = float(reidentification(pse.user_ids, est))
            else:
                row[attack_name] = float(trace_inference(grid, original, est))
        out[label] = row
    return out


@dataclass
class Calibration:
    """Statistics and attack scores of one set (``name``), JSON-ready through :meth:`as_dict`."""

    name: str
    stats: dict
    scores: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dict(name=self.name, **self.stats, scores=self.scores)


def measure(name: str, grid: Grid, reference: Traces, original: Traces, slots_per_day: int, *,
            seed: int = 0, with_attacks: bool = True, axis=None) -> Calibration:
    stats = day_statistics(reference, original, slots_per_day)
    scores = attack_scores(grid, reference, original, seed=seed, axis=axis) if with_attacks else {}
    return Calibration(name, stats, scores)


def osaka_2019(folder: Path, *, seed: int = 0, with_attacks: bool = True, team: int = 1,
               data_no: int = 1) -> Calibration:
    """The 2019 Osaka practice set's calibration (team ``team``, challenge ``data_no``)."""
    folder = Path(folder)
    flag = Challenge(data_no).name
    grid = Grid.from_info_region(folder / "info_region.csv")
    ref = read_traces(folder / f"reftraces_team{team:03d}_data{data_no:02d}_{flag}.csv", grid)
    org = read_traces(folder / f"orgtraces_team{team:03d}_data{data_no:02d}_{flag}.csv", grid)
    return measure("2019 Osaka", grid, ref, org, 20, seed=seed, with_attacks=with_attacks)


def differences(ours: Calibration, target: Calibration) -> dict:
    """Largest attack-score gap and the first = last gap, and whether both meet the targets."""
    gaps = [abs(ours.scores[a][k] - target.scores[a][k])
            for a in target.scores if a in ours.scores for k in target.scores[a] if k in ours.scores[a]]
    worst = max(gaps) if gaps else 0.0
    fl = abs(ours.stats["first_last"] - target.stats["first_last"])
    return dict(max_score_gap=worst, first_last_gap=fl,
                ok=bool(worst <= SCORE_TOLERANCE and fl <= FIRST_LAST_TOLERANCE))


def format_table(rows: list[Calibration], slots_per_day: int = 20) -> str:
    """A Markdown table with one column per calibrated set."""
    head = "| | " + " | ".join(r.name for r in rows) + " |"
    lines = [head, "|---" * (len(rows) + 1) + "|"]

    def line(label, values, fmt="{:.3f}"):
        lines.append(f"| {label} | " + " | ".join(fmt.format(v) for v in values) + " |")

    line("first = last slot (user-days)", [r.stats["first_last"] for r in rows])
    line("regions per day", [r.stats["regions_per_day"] for r in rows], "{:.2f}")
    line("stay between slots", [r.stats["stay"] for r in rows])
    for q in range(slots_per_day):
        h, mnt = divmod(8 * 60 + 30 * q, 60)
        if q in (0, 1, 2, 4, 8, 12, 16, 18, 19):
            line(f"at home {h}:{mnt:02d}", [r.stats["home_share"][q] for r in rows])
    labels = [a for a, _, _ in ANONYMIZERS if all(a in r.scores for r in rows)]
    for a in labels:
        for k in ATTACKS:
            kind = "s_I" if k.startswith("I") else "s_T"
            line(f"{a} {k} {kind}", [r.scores[a][k] for r in rows])
    return "\n".join(lines)


def generated(grid: Grid, *, users: int = 2000, ref_days: int = 2, org_days: int = 2, seed: int = 0,
              model=None, synth_options: dict | None = None, progress=None,
              **params) -> tuple[Traces, Traces, object]:
    """One contest set generated with the contest's path (:func:`synth.ppmtf_plus.train_contest_model`,
    then the model's synthesizer on the 2019 clock).

    Returns (reference, original, model); pass ``model`` (any method) to measure a trained one.
    """
    axis = TimeAxis(ref_days=ref_days, org_days=org_days)
    if model is None:
        model = train_contest_model(grid, axis, seed=seed, progress=progress, **params)
    synth = make_synthesizer(model, slots=axis.slots_per_day, slot_start_minute=axis.start_minute,
                             slot_step_minutes=axis.slot_minutes, **(synth_options or {}))
    rng = np.random.default_rng([seed, 1, 1])
    regions = synth.sample_set(users, ref_days + org_days, rng)          # PPMTF+: features, then days
    S = axis.slots_per_day
    ids = np.arange(1, users + 1)
    ref = Traces(ids, axis.ref_time_ids(), np.ascontiguousarray(regions[:, :ref_days]).reshape(users, -1))
    org = Traces(ids, axis.org_time_ids(), np.ascontiguousarray(regions[:, ref_days:]).reshape(users, -1))
    assert ref.L == S * ref_days  # noqa: S101 - an invariant of the reshape above, not input validation
    return ref, org, model


#: Where the 2019 Osaka practice set is looked for (beside the project, never copied into it).
OSAKA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "pwscup2019" / "osaka"


def run(*, users: int = 2000, ref_days: int = 2, org_days: int = 2, seed: int = 0, osaka: Path | None = OSAKA,
        with_attacks: bool = True, synth_options: dict | None = None, progress=None, model=None,
        **params) -> tuple[list[Calibration], dict | None]:
    """Generate a set, measure it and (when found) the 2019 Osaka set.

    Returns (the calibrations, generated first; the gaps of :func:`differences`
    or None without the 2019 data or the attacks).
    """
    grid = Grid() if model is None else model.grid()
    ref, org, _ = generated(grid, users=users, ref_days=ref_days, org_days=org_days, seed=seed, model=model,
                            synth_options=synth_options, progress=progress, **params)
    label = f"generated {users} x ({ref_days}+{org_days})" + ("" if model is None else f" ({model.method})")
    rows = [measure(label, grid, ref, org, 20, seed=seed, with_attacks=with_attacks,
                    axis=TimeAxis(ref_days=ref_days, org_days=org_days))]
    gaps = None
    if osaka is not None and Path(osaka, "info_region.csv").exists():
        rows.append(osaka_2019(Path(osaka), seed=seed, with_attacks=with_attacks))
        gaps = differences(rows[0], rows[1]) if with_attacks else None
    return rows, gaps


def main(args) -> int:
    """``python -m synth calibrate``: print the calibration table (Markdown) or JSON."""
    params = {k: getattr(args, k) for k in CONTEST_DEFAULTS if getattr(args, k, None) is not None}
    options = {} if args.home_minutes is None else {"home_minutes": args.home_minutes}
    model = None
    if getattr(args, "model", None):
        if params:
            raise ValueError(f"--model measures a trained model: training options {sorted(params)} do not apply")
        model = load_model(args.model)
        if model.method != "ppmtf":
            options = {}
    t0 = time.perf_counter()
    rows, gaps = run(users=args.users, ref_days=args.ref_days, org_days=args.org_days, seed=args.seed,
                     osaka=None if args.no_2019 else Path(args.osaka), with_attacks=not args.no_attacks,
                     synth_options=options, progress=args.progress, model=model, **params)
    if args.json:
        print(json.dumps(dict(rows=[r.as_dict() for r in rows], gaps=gaps), indent=2))
    else:
        print(format_table(rows))
        if gaps is not None:
            print(f"\nlargest attack-score gap {gaps['max_score_gap']:.3f} (target <= {SCORE_TOLERANCE}), "
                  f"first = last gap {gaps['first_last_gap']:.3f} (target <= {FIRST_LAST_TOLERANCE}): "
                  f"{'meets the targets' if gaps['ok'] else 'MISSES the targets'}")
        elif len(rows) == 1:
            print(f"\n(2019 Osaka data not found at {args.osaka}: no comparison)")
    print(f"calibrated in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0 if gaps is None or gaps["ok"] else 1
