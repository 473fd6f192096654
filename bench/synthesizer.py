"""Benchmark of the synthesizer: ``python -m bench.synthesizer`` prints time and peak memory.

1. PPMTF training on the 2019 people-flow sample (1000 users x 35 slots,
   1024 regions) at the defaults: K=16, alpha=200, 100 sweeps, 1000 sampled
   zeros per user and tensor. Target: < 3 min, < 4 GB.
2. PPMTF+ generation of one team set (one team x challenge: 2000 users x
   20 + 20 days, both trace files written) from that model. Target: < 30 s,
   < 4 GB.

3. The other synthesizers (:mod:`synth.methods`): semantic fake traces
   (sglt) and co-location-aware DP traces (coloc), each trained on the
   built-in city (300 users x 10 days) and generating one team set of
   ``--method-users`` (default 500; ``--full``: 2000) x ``--days`` days
   (privacy tests and planted co-locations included).

Each phase runs in its own child process, so its peak RSS is its own.
Options: ``--sweeps N`` (default 100), ``--users``, ``--days``, ``--data DIR``
(the people-flow folder; default ``../shared/data/pwscup2019/peopleflow``),
``--method-users``, ``--full``.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from scoring.grid import Grid
from scoring.io import read_traces
from synth.city import CityModel
from synth.generate import generate_set
from synth.methods import make_synthesizer, train_model
from synth.ppmtf import PPMTFModel, build_tensors, reconstruction_rmse, train
from synth.ppmtf_plus import Synthesizer

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "pwscup2019" / "peopleflow"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def phase_train(data: Path, model_path: Path, sweeps: int) -> dict:
    grid = Grid.from_info_region(data.parent / "tokyo" / "info_region.csv") \
        if (data.parent / "tokyo" / "info_region.csv").exists() else Grid()
    traces = read_traces(data / "traintraces_TK.csv", grid)
    t0 = time.perf_counter()
    model = train(traces, grid.nx, grid.ny, slots_per_day=traces.L, sweeps=sweeps, seed=0)
    seconds = time.perf_counter() - t0
    model.save(model_path)
    tensors = build_tensors(traces, grid.M, traces.L, rng=np.random.default_rng(0))
    return dict(phase="train", users=traces.m, slots=traces.L, regions=grid.M, K=model.K,
                sweeps=sweeps, seconds=round(seconds, 2), peak_rss_mb=round(_peak_mb(), 1),
                rmse=reconstruction_rmse(model, tensors))


def phase_generate(model_path: Path, users: int, days: int) -> dict:
    model = PPMTFModel.load(model_path)
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        synth = Synthesizer(model)
        generate_set(model, synth, out, 1, 1, "IDP", users=users, ref_days=days // 2,
                     org_days=days - days // 2, seed=0)
        seconds = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in Path(out).iterdir())
    return dict(phase="generate", users=users, days=days, seconds=round(seconds, 2),
                peak_rss_mb=round(_peak_mb(), 1), bytes_written=size)


def phase_method(method: str, users: int, days: int) -> dict:
    grid = Grid()
    training = CityModel(grid, seed=0).simulate(300, 10, seed=1)
    t0 = time.perf_counter()
    model = train_model(method, training, grid, slots_per_day=20, slot_start_minute=480, slot_minutes=30, seed=0)
    t1 = time.perf_counter()
    synth = make_synthesizer(model)
    synth.sample_set(users, days, np.random.default_rng([0, 1, 1]))
    t2 = time.perf_counter()
    return dict(phase=method, users=users, days=days, train_seconds=round(t1 - t0, 2),
                seconds=round(t2 - t1, 2), peak_rss_mb=round(_peak_mb(), 1), report=synth.stats)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.synthesizer", description=__doc__.splitlines()[0])
    p.add_argument("--sweeps", type=int, default=100)
    p.add_argument("--users", type=int, default=2000)
    p.add_argument("--days", type=int, default=40)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--method-users", type=int, default=500, help="users of the sglt and coloc sets (default 500)")
    p.add_argument("--full", action="store_true", help="sglt and coloc at the contest's size, 2000 users")
    p.add_argument("--phase", choices=("train", "generate", "sglt", "coloc"), help=argparse.SUPPRESS)
    p.add_argument("--model", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.phase == "train":
        print(json.dumps(phase_train(args.data, args.model, args.sweeps)))
        return 0
    if args.phase == "generate":
        print(json.dumps(phase_generate(args.model, args.users, args.days)))
        return 0
    if args.phase in ("sglt", "coloc"):
        print(json.dumps(phase_method(args.phase, args.method_users, args.days)))
        return 0
    if not (args.data / "traintraces_TK.csv").exists():
        print(f"people-flow sample not found in {args.data}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "pf_model.npz"
        base = [sys.executable, "-m", "bench.synthesizer", "--model", str(model), "--data", str(args.data),
                "--sweeps", str(args.sweeps), "--users", str(args.users), "--days", str(args.days)]
        for phase, target in (("train", "< 180 s, < 4096 MB"), ("generate", "< 30 s, < 4096 MB")):
            out = subprocess.run(base + ["--phase", phase], check=True, capture_output=True, text=True,  # noqa: S603 - this benchmark's own child, a fixed argument list
                                 cwd=Path(__file__).resolve().parent.parent)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            if phase == "train":
                print(f"PPMTF training, people-flow sample ({r['users']} users x {r['slots']} slots, "
                      f"M={r['regions']}, K={r['K']}, {r['sweeps']} sweeps): {r['seconds']:.1f} s, "
                      f"peak RSS {r['peak_rss_mb']:.0f} MB  [target {target}]")
                rm = r["rmse"]
                print(f"  RMSE non-zero cells: transitions {rm['trans_nonzero']:.3f}, visits "
                      f"{rm['visit_nonzero']:.3f}; zero cells {rm['trans_zero']:.3f} / "
                      f"{rm['visit_zero']:.3f}")
            else:
                print(f"PPMTF+ generation, one team set ({r['users']} users x {r['days']} days, R+O "
                      f"written, {r['bytes_written'] / 1e6:.1f} MB): {r['seconds']:.1f} s, "
                      f"peak RSS {r['peak_rss_mb']:.0f} MB  [target {target}]")
        users = 2000 if args.full else args.method_users
        for method in ("sglt", "coloc"):
            out = subprocess.run(base + ["--phase", method, "--method-users", str(users)], check=True,  # noqa: S603 - this benchmark's own child, a fixed argument list
                                 capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{method}: training on the city (300 users x 10 days) {r['train_seconds']:.1f} s; one team set "
                  f"({r['users']} users x {r['days']} days) {r['seconds']:.1f} s, peak RSS "
                  f"{r['peak_rss_mb']:.0f} MB; {json.dumps(r['report'], sort_keys=True)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
