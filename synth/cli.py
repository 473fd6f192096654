"""Command line of the synthesizer: ``python -m synth city|train|generate|audit|metrics|calibrate|compare``.

- ``city``: simulate the built-in city model and write training traces
  (:func:`synth.city.write_city`).
- ``train``: train a synthesizer (``--method ppmtf|sglt|coloc``, see
  :mod:`synth.methods`) on a ``user_id,time_id,reg_id`` training file and save
  the model (``.npz``, the method stored in it).
- ``generate``: write a round's contest datasets (every team x challenge,
  benchmark, two sample sets) with ``info_region.csv``, ``info_time.csv`` and
  ``manifest.json``, from a model of any method (``--option KEY=VALUE`` sets
  the method's generation options).
- ``metrics``: realism metrics of synthetic traces against real ones
  (:func:`synth.metrics.compute_all`).
- ``compare``: train every method on the same training data and compare
  realism (TP-TV-Top50, TM-EMD, VF-TV), diversity and the judge attacks'
  re-identification of the raw sets (:mod:`synth.compare`; table, CSV, PNG).
- ``audit``: the privacy audit of coloc on a city set: every statistic's change
  between neighbours against its declared sensitivity, or (``--empirical``)
  the distinguishing game on the released Q' and its empirical lower bound on
  epsilon (:mod:`synth.audit`; exit status 1 when the audit fails).
- ``calibrate``: generate a contest-size set and print its home and movement
  statistics and the six sample attacks' scores beside the 2019 Osaka data
  (:mod:`synth.calibrate`; exit status 1 when the targets are missed).

Grid: ``--grid info_region.csv``; without it, an ``info_region.csv`` beside the
input file is used, else the 2019 Tokyo grid. Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from scoring.errors import ValidationError
from scoring.grid import Grid, TimeAxis
from scoring.io import read_traces
from synth import audit, calibrate, coloc, compare, sglt
from synth.city import write_city
from synth.generate import generate_round
from synth.methods import METHODS, load_model, method_of, train_model, training_seed
from synth.metrics import compute_all
from synth.ppmtf import HyperPrior
from synth.ppmtf_plus import CONTEST_DEFAULTS as CD
from synth.ppmtf_plus import full_day


class StderrProgress:
    """``progress(done, total, message)`` printing to stderr at most every ``interval`` s (and at the end)."""

    def __init__(self, label: str, interval: float = 1.0, stream=None):
        self.label = label
        self.interval = interval
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.last = -1e9

    def __call__(self, done: int, total: int, message: str) -> None:
        now = time.monotonic()
        if now - self.last >= self.interval or done >= total:
            self.last = now
            print(f"[{self.label} {now - self.start:7.1f}s] {done}/{total} {message}",
                  file=self.stream, flush=True)


def _grid(arg: str | None, beside: Path | None) -> Grid:
    if arg:
        return Grid.from_info_region(arg)
    if beside is not None and (beside.parent / "info_region.csv").exists():
        return Grid.from_info_region(beside.parent / "info_region.csv")
    return Grid()


def _clock(text: str) -> int:
    """Minutes after midnight of ``H:MM``."""
    try:
        h, m = text.split(":")
        return int(h) * 60 + int(m)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a clock time H:MM, got {text!r}") from None


def cmd_city(args) -> int:
    grid = _grid(args.grid, None)
    # The contest's full day (as the platform trains: synth.ppmtf_plus.train_contest_model): the PPMTF+ home
    # boost sits at the ends of the model's day, before and after the contest's window, which generate cuts.
    slots, start, step = full_day(TimeAxis(), args.lead_minutes, args.tail_minutes)
    paths = write_city(args.out, grid, args.users, args.days, args.seed,
                       time_axis=TimeAxis(slots_per_day=slots, start_minute=start, slot_minutes=step))
    print(f"{args.users} users x {args.days} days of {slots} slots from {start // 60}:{start % 60:02d} "
          f"every {step} min", file=sys.stderr)
    for name, path in paths.items():
        print(f"{name}: {path}")
    return 0


def _read_friends(path, user_ids):
    """(E, 2) 0-based row pairs of a ``user_id,friend_id`` CSV (header optional) over the training users."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.strip().split(",")
            if not line.strip() or (n == 1 and not parts[0].strip().lstrip("-").isdigit()):
                continue
            try:
                rows.append((int(parts[0]), int(parts[1])))
            except (ValueError, IndexError):
                raise ValueError(f"{path} line {n}: expected user_id,friend_id (integers), got {line.strip()!r}") \
                    from None
    pairs = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
    ids = np.asarray(user_ids, dtype=np.int64)
    pos = np.searchsorted(ids, pairs)
    bad = (pos >= len(ids)) | (ids[np.minimum(pos, len(ids) - 1)] != pairs)
    if bad.any():
        raise ValueError(f"{path}: user id {int(pairs[bad][0])} is not a training user")
    return pos


def _method_params(args) -> dict:
    if args.method == "ppmtf":
        return dict(K=args.dim, alpha=args.alpha, sweeps=args.iterations, zero_num=args.zero_num,
                    prior=HyperPrior(), centered_scatter=args.centered_scatter)
    if args.method == "sglt":
        return dict(periods=args.periods, clusters=args.clusters, partners=args.partners,
                    alt_fraction=args.alt_fraction)
    return dict(eps1=args.eps1, eps2=args.eps2, eps3=args.eps3, c=args.c, c_trans=args.c_trans,
                mechanism=args.mechanism, successors=args.successors, min_meetings=args.min_meetings,
                min_users=args.min_users)


def cmd_train(args) -> int:
    src = Path(args.traces)
    grid = _grid(args.grid, src)
    time_file = Path(args.time) if args.time else src.parent / "info_time.csv"
    if args.slots_per_day is not None:
        T, start, length = args.slots_per_day, args.day_start, None
    elif time_file.exists():
        axis = TimeAxis.from_info_time(time_file)
        T, start, length = axis.slots_per_day, axis.start_minute, axis.slot_minutes
        print(f"slots from {time_file}: {T} a day from {start // 60}:{start % 60:02d} "
              f"every {length} min", file=sys.stderr)
    else:
        T, start, length = 20, args.day_start, None
    if length is None:
        length = (args.day_end - start) / T
    traces = read_traces(src, grid)
    if traces.L % T:
        print(f"warning: {traces.L} time ids are not a whole number of {T}-slot days",
              file=sys.stderr)
    params = _method_params(args)
    if args.method == "coloc" and args.friends:
        params["friends"] = _read_friends(args.friends, traces.user_ids)
    t0 = time.perf_counter()
    # Without --seed: 0 (reproducible) for ppmtf and sglt, fresh randomness for coloc's DP noise.
    seed = args.seed if args.seed is not None else training_seed(args.method, 0)
    model = train_model(args.method, traces, grid, slots_per_day=T, slot_start_minute=start, slot_minutes=length,
                        seed=seed, progress=StderrProgress("train"), **params)
    model.save(args.out)
    print(f"trained {args.method} on {traces.m} users x {traces.L} time ids in "
          f"{time.perf_counter() - t0:.1f} s -> {args.out}")
    if args.method == "coloc":
        print(json.dumps(model.ledger(), indent=2))
        # The exact figures go to the organizer's terminal only, never into the model or a manifest.
        print("training statistics (exact, NOT differentially private): "
              + json.dumps({k: v for k, v in model.training_stats.items() if k != "note"}), file=sys.stderr)
    return 0


def _option(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` with VALUE read as JSON (numbers, true/false) or else as a string."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


def cmd_generate(args) -> int:
    model = load_model(args.model)
    grid = Grid.from_info_region(args.grid) if args.grid else None
    options = dict(args.option or [])
    if method_of(model) == "ppmtf":
        options.setdefault("instant_minutes", args.instant_minutes)
        if args.home_minutes is not None:
            options["home_minutes"] = args.home_minutes
    t0 = time.perf_counter()
    manifest = generate_round(model, args.out, args.teams, users=args.users, ref_days=args.ref_days,
                              org_days=args.org_days, seed=args.seed, pool_days=args.pool_days,
                              grid=grid, day_split=args.day_split, progress=StderrProgress("generate"),
                              **options)
    print(f"wrote {len(manifest['sets'])} datasets ({len(manifest['files'])} files) to {args.out} "
          f"in {time.perf_counter() - t0:.1f} s")
    return 0


def cmd_metrics(args) -> int:
    real_path, synth_path = Path(args.real), Path(args.synth)
    grid = _grid(args.grid, real_path)
    real = read_traces(real_path, grid)
    synth = read_traces(synth_path, grid)
    other = read_traces(args.other_team, grid) if args.other_team else None
    result = compute_all(real, synth, grid, args.slots_per_day, other_team=other)
    print(json.dumps(result, indent=2, sort_keys=True, default=float))
    return 0


def cmd_calibrate(args) -> int:
    if args.osaka is None:
        args.osaka = str(calibrate.OSAKA)
    args.progress = StderrProgress("calibrate")
    return calibrate.main(args)


def cmd_compare(args) -> int:
    args.progress = StderrProgress("compare")
    return compare.main(args)


def _add_city(sub) -> None:
    """``city``: simulate the built-in city's training traces and points of interest."""
    c = sub.add_parser("city", help="simulate the built-in city model (training traces + POIs) over the "
                                    "contest's full day, as the platform trains")
    c.add_argument("--users", type=int, default=CD["train_users"], help=f"default {CD['train_users']}")
    c.add_argument("--days", type=int, default=CD["train_days"], help=f"default {CD['train_days']}")
    c.add_argument("--lead-minutes", type=int, default=CD["lead_minutes"],
                   help=f"the training day starts this long before the contest's 8:00 (default {CD['lead_minutes']})")
    c.add_argument("--tail-minutes", type=int, default=CD["tail_minutes"],
                   help=f"and ends this long after the contest's 18:00 (default {CD['tail_minutes']})")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--out", required=True)
    c.add_argument("--grid", help="info_region.csv of the grid (default: 2019 Tokyo)")
    c.set_defaults(func=cmd_city)


def _add_train(sub) -> None:
    """``train``: every synthesizer's training options (each option's help names its method)."""
    t = sub.add_parser("train", help="train a synthesizer on a user_id,time_id,reg_id file",
                       description="Train a synthesizer. Methods: " + "; ".join(
                           f"{k}: {v}" for k, v in METHODS.items()) + ".")
    t.add_argument("traces")
    t.add_argument("--out", required=True, help="model file (.npz)")
    t.add_argument("--method", choices=tuple(METHODS), default="ppmtf",
                   help="synthesizer: " + "; ".join(f"{k} = {v}" for k, v in METHODS.items()) + " (default ppmtf)")
    t.add_argument("--iterations", type=int, default=CD["sweeps"],
                   help=f"ppmtf: Gibbs sweeps (default {CD['sweeps']}, the platform's)")
    t.add_argument("--dim", type=int, default=CD["K"], help=f"ppmtf: latent dimension K (default {CD['K']})")
    t.add_argument("--alpha", type=float, default=200.0, help="ppmtf: noise precision (default 200)")
    t.add_argument("--zero-num", type=int, default=1000, help="ppmtf: sampled zeros per user and tensor")
    sd = sglt.TRAINING_DEFAULTS
    t.add_argument("--periods", type=int, default=sd["periods"], help=f"sglt: time periods of the day "
                                                                        f"(default {sd['periods']})")
    t.add_argument("--clusters", type=lambda v: v if v == "auto" else int(v), default=sd["clusters"],
                   help=f"sglt: semantic classes kappa, or auto to choose it (default {sd['clusters']})")
    t.add_argument("--partners", type=int, default=sd["partners"],
                   help=f"sglt: users each user is compared with (default {sd['partners']})")
    t.add_argument("--alt-fraction", type=float, default=sd["alt_fraction"],
                   help=f"sglt: share of users kept out of the seeds as deniability alternatives "
                        f"(default {sd['alt_fraction']})")
    cd = coloc.TRAINING_DEFAULTS
    for name in ("eps1", "eps2", "eps3"):
        t.add_argument(f"--{name}", type=float, default=cd[name], help=f"coloc: privacy budget (default {cd[name]})")
    t.add_argument("--c", type=int, default=cd["c"],
                   help=f"coloc: public instants at which co-locations are read, Q's sensitivity (default {cd['c']})")
    t.add_argument("--min-users", type=int, default=cd["min_users"],
                   help="coloc: public lower bound on the training users, p''s sensitivity 2/min_users "
                        f"(default {cd['min_users']}; fewer users is an error)")
    t.add_argument("--c-trans", type=int, default=cd["c_trans"],
                   help=f"coloc: transitions per user (default {cd['c_trans']})")
    t.add_argument("--mechanism", choices=coloc.MECHANISMS, default=cd["mechanism"], help="coloc: noise on Q")
    t.add_argument("--successors", type=int, default=cd["successors"],
                   help=f"coloc: kept successors per region (default {cd['successors']})")
    t.add_argument("--min-meetings", type=int, default=cd["min_meetings"],
                   help="coloc: friends inferred when sharing a region this often (without --friends)")
    t.add_argument("--friends", help="coloc: user_id,friend_id CSV of the training users' friendships")
    t.add_argument("--slots-per-day", type=int, default=None,
                   help="slots per day of the training time ids (default: from info_time.csv "
                        "beside the file or --time, else 20)")
    t.add_argument("--time", help="info_time.csv giving the training slots")
    t.add_argument("--day-start", type=_clock, default=8 * 60, help="clock of slot 0 (default 8:00)")
    t.add_argument("--day-end", type=_clock, default=18 * 60,
                   help="end of the last slot when --slots-per-day is given (default 18:00)")
    t.add_argument("--centered-scatter", action="store_true",
                   help="textbook BPMF centred scatter (default: the reference's uncentred form)")
    t.add_argument("--seed", type=int, default=None,
                   help="default 0; coloc: fresh randomness (whoever knows the noise's seed can subtract the noise)")
    t.add_argument("--grid", help="info_region.csv of the grid")
    t.set_defaults(func=cmd_train)


def _add_generate(sub) -> None:
    """``generate``: a round's data sets from a trained model."""
    g = sub.add_parser("generate", help="generate a round's contest datasets from a model")
    g.add_argument("model")
    g.add_argument("--teams", type=int, required=True)
    g.add_argument("--users", type=int, default=2000)
    g.add_argument("--ref-days", type=int, default=20)
    g.add_argument("--org-days", type=int, default=20)
    g.add_argument("--pool-days", type=int, default=None,
                   help="calendar days the sporadic days are drawn from (default 1.5 x days)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--home-minutes", type=float, default=None,
                   help="ppmtf: home windows at the start and end of the model's day, minutes "
                        "(default: synth.ppmtf_plus.HOME_MINUTES)")
    g.add_argument("--day-split", choices=("chronological", "random"), default="chronological",
                   help="reference = the earlier days (paper 3.3, default) or days split at random")
    g.add_argument("--instant-minutes", type=float, default=5.0, help="ppmtf: chain step in minutes")
    g.add_argument("--option", type=_option, action="append", metavar="KEY=VALUE",
                   help="a generation option of the model's method (sglt: par_c, par_d, k, ...; coloc: theta, "
                        "par_v, ...); repeatable")
    g.add_argument("--out", required=True)
    g.add_argument("--grid", help="info_region.csv of the contest grid")
    g.set_defaults(func=cmd_generate)


def _add_calibrate(sub) -> None:
    """``calibrate``: a contest-size set against the 2019 Osaka data."""
    k = sub.add_parser("calibrate", help="generate a contest-size set and compare its statistics and "
                                         "sample-attack scores with the 2019 Osaka data")
    k.add_argument("--users", type=int, default=2000)
    k.add_argument("--ref-days", type=int, default=2, help="reference days (2019 Osaka: 2; final round: 20)")
    k.add_argument("--org-days", type=int, default=2, help="original days (2019 Osaka: 2; final round: 20)")
    k.add_argument("--seed", type=int, default=0)
    k.add_argument("--train-users", type=int, default=None, help="city users PPMTF trains on")
    k.add_argument("--train-days", type=int, default=None, help="days of each training user")
    k.add_argument("--K", type=int, default=None, help="latent dimension")
    k.add_argument("--sweeps", type=int, default=None, help="Gibbs sweeps")
    k.add_argument("--lead-minutes", type=int, default=None, help="model day start before the first slot")
    k.add_argument("--tail-minutes", type=int, default=None, help="model day end after the contest day")
    k.add_argument("--home-minutes", type=float, default=None, help="home windows of the model day")
    k.add_argument("--model", default=None, help="measure this trained model (any method) instead of training "
                                                  "the contest's")
    k.add_argument("--osaka", default=None, help="folder of the 2019 Osaka set "
                                                 "(default ../shared/data/pwscup2019/osaka beside the project)")
    k.add_argument("--no-2019", action="store_true", help="do not compare with the 2019 data")
    k.add_argument("--no-attacks", action="store_true", help="statistics only (fast)")
    k.add_argument("--json", action="store_true", help="print JSON instead of the Markdown table")
    k.set_defaults(func=cmd_calibrate)


def _add_audit(sub) -> None:
    """``audit``: coloc's privacy audit on a city set (sensitivities, or the distinguishing game)."""
    a = sub.add_parser("audit", help="coloc's privacy audit: sensitivities between neighbours, or (--empirical) "
                                     "the empirical lower bound on Q''s epsilon")
    a.add_argument("--empirical", action="store_true",
                   help="the distinguishing game on the released Q' (trainings with and without the hub)")
    a.add_argument("--trials", type=int, default=audit.EMPIRICAL_TRIALS, help="trainings per neighbour")
    a.add_argument("--users", type=int, default=200, help="city users of the training set")
    a.add_argument("--days", type=int, default=4, help="days of each training user")
    a.add_argument("--friends", type=int, default=20, help="friends of the hub (the user added)")
    a.add_argument("--c", type=int, default=5, help="co-location instants read (Q's sensitivity)")
    a.add_argument("--eps2", type=float, default=1.0, help="Q''s declared epsilon")
    a.add_argument("--seed", type=int, default=0, help="the city's and the trainings' seed")
    a.set_defaults(func=audit.main)


def _add_compare(sub) -> None:
    """``compare``: every synthesizer on the same training data."""
    q = sub.add_parser("compare", help="every synthesizer on the same training data: realism, diversity, "
                                       "re-identification of the raw sets (table, CSV, PNG)")
    q.add_argument("--data", choices=("city", "osaka"), default="city",
                   help="training data: the built-in city (default) or the 2019 Osaka practice set")
    q.add_argument("--train-users", type=int, default=500)
    q.add_argument("--users", type=int, default=500, help="users of each generated set and of the real set")
    q.add_argument("--ref-days", type=int, default=2)
    q.add_argument("--org-days", type=int, default=2)
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--no-attacks", action="store_true", help="realism and diversity only")
    q.add_argument("--no-plot", action="store_true", help="no PNG (matplotlib is a development dependency)")
    q.add_argument("--out", default="compare", help="folder of compare.md, .csv, .json and .png")
    q.set_defaults(func=cmd_compare)


def _add_metrics(sub) -> None:
    """``metrics``: realism of synthetic against real traces."""
    m = sub.add_parser("metrics", help="realism metrics of synthetic vs real traces")
    m.add_argument("real")
    m.add_argument("synth")
    m.add_argument("--slots-per-day", type=int, default=20)
    m.add_argument("--other-team", help="a second team's synthetic traces (diversity: Same-TV vs Diff-TV)")
    m.add_argument("--grid", help="info_region.csv of the grid")
    m.set_defaults(func=cmd_metrics)


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per ``_add_*`` function below."""
    p = argparse.ArgumentParser(prog="python -m synth", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    for add in (_add_city, _add_train, _add_generate, _add_audit, _add_calibrate, _add_compare, _add_metrics):
        add(sub)
    return p

def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, OSError, ValidationError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
