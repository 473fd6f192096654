"""``python -m synth compare``: the synthesizers side by side on the same training data.

Every method of :mod:`synth.methods` (PPMTF+ also without its home boost,
whose windows fall inside the day when the model is trained on the contest's
own day; coloc also at a looser budget) is trained on the same training traces and generates two independent sets
("teams") of ``users`` x (``ref_days`` + ``org_days``) on the contest day.
For each, against held-out real traces of the same population:

- realism: TP-TV-Top50, TM-EMD, VF-TV (:mod:`synth.metrics`, rules §13);
- diversity (paper seed 000, Appendix B): Same-TV vs Diff-TV between the two
  sets' users; a synthesizer with per-user features has Same-TV close to
  Diff-TV (no user is copied across teams);
- re-identifiability of the un-anonymized set (A1, no anonymization) by the
  judge's attacks I1-I3 (s_I = 1 - share of users re-identified) and T1-T3
  (s_T): what a contest's attackers would face with the raw data; s_I near 1
  (like I1's random guess) means the set has no per-user signal to protect,
  so anonymizing it would be meaningless;
- training and generation time (this machine).

Training data: ``--data city`` (default; the built-in city's people,
training and held-out real users drawn separately) or ``--data osaka`` (the
2019 Osaka practice set: training = the reference traces of team 1's IDP
set, real = its original traces; never copied into the project).

Writes ``compare.md``, ``compare.csv`` and ``compare.png`` into ``--out``.

Every method trains with ``--seed``, coloc's differential-privacy noise included, so a comparison
reproduces; the platform and ``python -m synth train`` draw coloc's noise from the operating system
instead. The output says so in a line (:func:`seed_note`).
"""
from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import numpy as np

from scoring.grid import Grid, TimeAxis
from scoring.io import read_traces
from scoring.traces import Traces
from synth import metrics, registry
from synth.calibrate import OSAKA, attack_scores
from synth.city import CityModel
from synth.methods import make_synthesizer, train_model

#: (label, method, training parameters, generation options) compared.
ENTRIES = (
    ("PPMTF+", "ppmtf", dict(K=16, sweeps=30), {}),
    ("PPMTF+ no home boost", "ppmtf", dict(K=16, sweeps=30), dict(home=False)),
    ("SGLT", "sglt", {}, {}),
    ("coloc eps=1 (paper)", "coloc", dict(eps1=1.0, eps2=1.0, eps3=1.0), {}),
    ("coloc eps=20 c_trans=100", "coloc", dict(eps1=20.0, eps2=20.0, eps3=20.0, c_trans=100), {}),
)
ATTACKS = ("I1-rand", "I2-VisitProb", "I3-HomeProb", "T1-rand", "T2-VisitProb", "T3-HomeProb")
COLUMNS = ("tp_tv_top50", "tm_emd", "vf_tv", "same_tv", "diff_tv") + ATTACKS + ("train_s", "generate_s")


def _split(traces: Traces, axis: TimeAxis) -> tuple[Traces, Traces]:
    S, r = axis.slots_per_day, axis.ref_days
    return (Traces(traces.user_ids, axis.ref_time_ids(), traces.regions[:, :S * r]),
            Traces(traces.user_ids, axis.org_time_ids(), traces.regions[:, S * r:]))


def _as_traces(regions: np.ndarray, axis: TimeAxis) -> Traces:
    m = len(regions)
    return Traces(np.arange(1, m + 1), np.arange(1, regions.shape[1] * regions.shape[2] + 1),
                  np.ascontiguousarray(regions).reshape(m, -1).astype(np.int32))


def data(source: str, *, train_users: int, users: int, axis: TimeAxis, seed: int,
         osaka: Path = OSAKA) -> tuple[Grid, Traces, Traces]:
    """(grid, training traces, held-out real traces of ``users`` x the axis' days)."""
    n_days = axis.ref_days + axis.org_days
    if source == "city":
        grid = Grid()
        city = CityModel(grid, seed=seed)
        train = city.simulate(train_users, n_days, time_axis=axis, seed=seed + 1)
        real = city.simulate(users, n_days, time_axis=axis, seed=seed + 2)
        return grid, train, real
    folder = Path(osaka)
    grid = Grid.from_info_region(folder / "info_region.csv")
    ref = read_traces(folder / "reftraces_team001_data01_IDP.csv", grid)
    org = read_traces(folder / "orgtraces_team001_data01_IDP.csv", grid)
    if ref.L != axis.slots_per_day * 2 or org.L != axis.slots_per_day * 2:
        raise ValueError("the Osaka practice set has 2 + 2 days of 20 slots; use --ref-days 2 --org-days 2")
    # Training: the reference days of the first train_users users; real: the original days of the others.
    k = min(train_users, ref.m // 2)
    train = Traces(ref.user_ids[:k], np.arange(1, ref.L + 1), ref.regions[:k])
    rest = slice(k, k + users)
    real = Traces(org.user_ids[rest], np.arange(1, org.L + 1), org.regions[rest])
    return grid, train, real


def run(source: str = "city", *, train_users: int = 500, users: int = 500, ref_days: int = 2, org_days: int = 2,
        seed: int = 0, entries=ENTRIES, with_attacks: bool = True, progress=None) -> list[dict]:
    """One row per entry plus the real data's own row: a second draw of real users against the held-out
    ones (the noise floor of the realism metrics; on Osaka, the training users' reference days)."""
    axis = TimeAxis(ref_days=ref_days, org_days=org_days)
    S = axis.slots_per_day
    grid, train, real = data(source, train_users=train_users, users=users, axis=axis, seed=seed)
    real_axis = TimeAxis(ref_days=real.L // (2 * S), org_days=real.L // S - real.L // (2 * S))
    rows = []

    def measure(label, a: Traces, b: Traces, extra: dict):
        ref, org = _split(a, real_axis)
        row = dict(name=label, **extra)
        m = metrics.compute_all(real, a, grid, S, other_team=b)
        row.update(tp_tv_top50=m["tp_tv_top50"], tm_emd=m["tm_emd"], vf_tv=m["vf_tv"],
                   same_tv=m["diversity"]["same_tv"], diff_tv=m["diversity"]["diff_tv"])
        if with_attacks:
            row.update(attack_scores(grid, ref, org, seed=seed, anonymizers=(("A1", "A1-none", {}),),
                                     attacks=ATTACKS, axis=real_axis)["A1"])
        rows.append(row)
        if progress:
            progress(len(rows), len(entries) + 1, f"measured {label}")

    for label, method, tparams, options in entries:
        if method == "coloc":                   # the compared training size is public: p''s bound
            tparams = {"min_users": max(2, train.m - 1), **tparams}
        t0 = time.perf_counter()
        model = train_model(method, train, grid, slots_per_day=S, slot_start_minute=axis.start_minute,
                            slot_minutes=axis.slot_minutes, seed=seed, **tparams)
        t1 = time.perf_counter()
        synth = make_synthesizer(model, slots=S, slot_start_minute=axis.start_minute,
                                 slot_step_minutes=axis.slot_minutes, **options)
        team_a = synth.sample_set(real.m, real_axis.ref_days + real_axis.org_days, np.random.default_rng([seed, 1]))
        t2 = time.perf_counter()
        team_b = synth.sample_set(real.m, real_axis.ref_days + real_axis.org_days, np.random.default_rng([seed, 2]))
        measure(label, _as_traces(team_a, axis), _as_traces(team_b, axis),
                dict(train_s=round(t1 - t0, 1), generate_s=round(t2 - t1, 1)))
    # The real data itself: held-out real users against a second real draw (its own noise floor).
    other = data(source, train_users=train_users, users=users, axis=axis, seed=seed + 7)[2] if source == "city" \
        else Traces(train.user_ids, train.time_ids, train.regions[:real.m])
    measure("real (a second draw)", other, real, dict(train_s=None, generate_s=None))
    return rows


def seed_note(entries, seed: int) -> str | None:
    """The line that says which compared methods' privacy noise is seeded (None when none of
    ``entries`` has differential-privacy noise): :func:`run` trains every entry with ``seed``."""
    labels = [label for label, method, _params, _options in entries if registry.get(method).fresh_noise]
    if not labels:
        return None
    return (f"seeded: the differential-privacy noise of {', '.join(labels)} is drawn from seed {seed} "
            f"(reproducible research figures; the platform draws it from the operating system)")


def to_markdown(rows: list[dict]) -> str:
    head = ["data", "TP-TV-Top50", "TM-EMD", "VF-TV", "Same-TV", "Diff-TV",
            "I1", "I2", "I3", "T1", "T2", "T3", "train s", "generate s"]
    out = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for r in rows:
        cells = [r["name"]]
        for c in COLUMNS:
            v = r.get(c)
            cells.append("-" if v is None else (f"{v:.3f}" if isinstance(v, float) and c not in
                                                ("train_s", "generate_s") else str(v)))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def write_csv(rows: list[dict], path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(("name",) + COLUMNS)
        for r in rows:
            w.writerow([r["name"]] + ["" if r.get(c) is None else r[c] for c in COLUMNS])


def plot(rows: list[dict], path) -> None:
    """A PNG: realism distances (lower is better) and re-identification of the raw set (I2, I3)."""
    import matplotlib  # local: matplotlib is a dev-only package (requirements-dev.txt), for the plot alone
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # local: the same optional package, after choosing its Agg backend
    names = [r["name"] for r in rows]
    groups = (("realism (lower = closer to real)", ("tp_tv_top50", "vf_tv")),
              ("TM-EMD (grid units)", ("tm_emd",)),
              ("diversity (Same-TV vs Diff-TV)", ("same_tv", "diff_tv")),
              ("raw set: s_I = 1 - re-identified (low = linkable)", ("I2-VisitProb", "I3-HomeProb")))
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 4.2))
    x = np.arange(len(names))
    for ax, (title, cols) in zip(axes, groups):
        width = 0.8 / len(cols)
        for i, c in enumerate(cols):
            ax.bar(x + (i - (len(cols) - 1) / 2) * width, [r.get(c) or 0.0 for r in rows], width, label=c)
        ax.set_xticks(x, names, rotation=35, ha="right", fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rows = run(args.data, train_users=args.train_users, users=args.users, ref_days=args.ref_days,
               org_days=args.org_days, seed=args.seed, with_attacks=not args.no_attacks, progress=args.progress)
    table = to_markdown(rows)
    note = seed_note(ENTRIES, args.seed)
    if note:
        table += f"\n\n{note}"
    (out / "compare.md").write_text(table + "\n", encoding="utf-8")
    (out / "compare.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    write_csv(rows, out / "compare.csv")
    if not args.no_plot:
        plot(rows, out / "compare.png")
    print(table)
    print(f"\nwritten to {out} in {time.perf_counter() - t0:.0f} s")
    return 0
