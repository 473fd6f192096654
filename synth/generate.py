"""A round's contest data sets (rules §§3-5), whatever the synthesizer method.

The round's calendar days (:func:`round_time_axis`), its manifest
(:func:`round_manifest`), its sets (:func:`round_sets`: every team, the
benchmark and two samples, each challenge), one set's reference and original
files (:func:`generate_set`) and a whole round on disk (:func:`generate_round`,
``python -m synth generate``). The method's model and synthesizer come from
:mod:`synth.methods`; a set's bytes depend only on the round's seed and the
set's name.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
from pathlib import Path

import numpy as np

from scoring.grid import Grid, TimeAxis
from scoring.io import write_traces
from scoring.traces import Traces
from scoring.vocabulary import Challenge
from synth.common import Progress, no_progress
from synth.methods import make_synthesizer, model_summary

#: (data number, flag of the 2019 file names) of each challenge: ((1, "IDP"), (2, "TRP"))
CHALLENGES = tuple((int(c), c.name) for c in Challenge)


# ---------------------------------------------------------------------------
# Contest datasets (rules §§3-5)
# ---------------------------------------------------------------------------
def set_name(kind: str, team: int, data_no: int, flag: str) -> str:
    """2019 file name, e.g. ``reftraces_team001_data01_IDP.csv``."""
    return f"{kind}traces_team{team:03d}_data{data_no:02d}_{flag}.csv"


#: How the Lr + Lo calendar days are split into reference and original days.
DAY_SPLITS = ("chronological", "random")


def draw_days(ref_days: int, org_days: int, pool_days: int, rng: np.random.Generator,
              split: str = "chronological"):
    """Calendar day numbers (1-based) of the reference and original days.

    ``ref_days + org_days`` distinct days are drawn uniformly from
    ``1..pool_days`` (sporadic, as the 2019 final round). With ``split =
    "chronological"`` (default; paper section 3.3: "the former 20 days" are
    the reference traces, "the latter 20 days" the original traces) the
    earliest ``ref_days`` are the reference days; with ``"random"`` the days
    are split at random (reference and original days interleaved). Each set
    ascending.
    """
    n = ref_days + org_days
    if pool_days < n:
        raise ValueError(f"day pool of {pool_days} days is smaller than {ref_days} + {org_days} days")
    if split not in DAY_SPLITS:
        raise ValueError(f"day split {split!r}: expected one of {', '.join(DAY_SPLITS)}")
    days = rng.choice(np.arange(1, pool_days + 1), size=n, replace=False)
    if split == "chronological":
        days = np.sort(days)
    return np.sort(days[:ref_days]), np.sort(days[ref_days:])


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def generate_set(model, synth, out_dir, team: int, data_no: int, flag: str,
                 *, users: int = 2000, ref_days: int = 20, org_days: int = 20, seed: int = 0) -> dict:
    """Generate one (team, challenge) set: fresh users, R and O files; return their names.

    ``model`` is any method's model and ``synth`` its synthesizer
    (:func:`synth.methods.make_synthesizer`). The set's random stream is
    ``default_rng([seed, team, data_no])``. Days ``0..Lr-1`` of each user are
    the reference days and the rest the original days (days are i.i.d. given
    the user, so which generated day gets which calendar number does not
    matter). The co-location method also writes the set's friendship graph
    (``friends_teamXXX_dataYY_FLAG.csv``, ``user_id,friend_id`` with user ids
    of the set) and every method's per-set report (privacy tests, planted
    co-locations) is returned under ``report``.
    """
    out = Path(out_dir)
    rng = np.random.default_rng([seed, team, data_no])
    regions = synth.sample_set(users, ref_days + org_days, rng)
    S = synth.S
    user_ids = np.arange(1, users + 1)
    names = {}
    for kind, tids, arr in (("ref", np.arange(1, S * ref_days + 1), regions[:, :ref_days]),
                            ("org", np.arange(S * ref_days + 1, S * (ref_days + org_days) + 1),
                             regions[:, ref_days:])):
        name = set_name(kind, team, data_no, flag)
        write_traces(Traces(user_ids, tids, np.ascontiguousarray(arr).reshape(users, -1)), out / name)
        names[f"{kind}traces"] = name
    friends = getattr(synth, "friends", None)
    if friends is not None:
        name = f"friends_team{team:03d}_data{data_no:02d}_{flag}.csv"
        lines = ["user_id,friend_id"] + [f"{i + 1},{j + 1}" for i, j in friends.tolist()]
        (out / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        names["friends"] = name
    report = getattr(synth, "stats", None)
    if report:
        names["report"] = dict(report)
    return names


def round_sets(teams: int) -> list[tuple[int, str, int, str]]:
    """``(team, role, data_no, flag)`` of every set of a round of ``teams`` teams, in file order: each team
    1..``teams`` (role ``team``), the benchmark ``teams+1`` and the sample sets ``teams+2``, ``teams+3``,
    each with both challenges (data01 IDP, data02 TRP)."""
    roles = [(t, "team") for t in range(1, teams + 1)] + [(teams + 1, "benchmark"),
                                                         (teams + 2, "sample"), (teams + 3, "sample")]
    return [(team, role, d, flag) for team, role in roles for d, flag in CHALLENGES]


def default_pool_days(ref_days: int, org_days: int) -> int:
    """The calendar days the sporadic days are drawn from: ``1.5 * (Lr + Lo)`` (the 2019 script: 60 for 40)."""
    return int(np.ceil(1.5 * (ref_days + org_days)))


def round_time_axis(ref_days: int, org_days: int, *, seed: int, pool_days: int, slots: int = 20,
                    slot_start_minute: int = 480, slot_minutes: int = 30,
                    day_split: str = "chronological") -> TimeAxis:
    """The round's clock with its calendar days, drawn from ``default_rng([seed, 0, 0])`` (:func:`draw_days`):
    the same for every set of the round, whoever generates which."""
    ref_cal, org_cal = draw_days(ref_days, org_days, pool_days, np.random.default_rng([seed, 0, 0]),
                                 split=day_split)
    return TimeAxis(slots_per_day=slots, ref_days=ref_days, org_days=org_days,
                    start_minute=slot_start_minute, slot_minutes=slot_minutes,
                    day_numbers=tuple(int(d) for d in np.concatenate([ref_cal, org_cal])))


def round_manifest(model, synth, grid: Grid, axis: TimeAxis, teams: int, *, users: int, seed: int,
                   pool_days: int, day_split: str) -> dict:
    """A round's manifest before any set is generated: generator, seed, parameters, model, grid, and one
    entry per set (:func:`round_sets`) with its role; :func:`generate_set` adds its file names and report,
    and ``files`` (name -> SHA-256 and size) comes last."""
    if (grid.nx, grid.ny) != (model.nx, model.ny):
        raise ValueError(f"grid {grid.nx} x {grid.ny} does not match the model's {model.nx} x {model.ny}")
    generator, generator_version, model_info = model_summary(model)
    days = [int(d) for d in axis.day_numbers]
    return dict(
        generator=generator, generator_version=generator_version, seed=seed,
        parameters=dict(teams=teams, users=users, ref_days=axis.ref_days, org_days=axis.org_days,
                        pool_days=pool_days, day_split=day_split, slots=axis.slots_per_day,
                        slot_start_minute=axis.start_minute, slot_minutes=axis.slot_minutes,
                        ref_day_numbers=days[:axis.ref_days], org_day_numbers=days[axis.ref_days:],
                        synthesizer=synth.options()),
        model=model_info,
        grid=dict(nx=grid.nx, ny=grid.ny, min_x=grid.min_x, max_x=grid.max_x, min_y=grid.min_y,
                  max_y=grid.max_y),
        sets=[dict(team=team, role=role, data=d, flag=flag) for team, role, d, flag in round_sets(teams)],
        files={})


def generate_round(model, out_dir, teams: int, *, users: int = 2000, ref_days: int = 20,
                   org_days: int = 20, seed: int = 0, pool_days: int | None = None,
                   grid: Grid | None = None, slots: int = 20, slot_start_minute: int = 480,
                   slot_minutes: int = 30, day_split: str = "chronological",
                   progress: Progress | None = None, **synth_options) -> dict:
    """Write a round's datasets and ``manifest.json`` into ``out_dir``; return the manifest.

    Sets: every team 1..``teams`` and challenge (data01 IDP, data02 TRP), the
    benchmark (team ``teams+1``) and two sample sets (teams ``teams+2``,
    ``teams+3``), each challenge of each with its own independent virtual
    users (fresh feature vectors per pair). Every set has the reference
    traces R (time ids 1..S*Lr) and original traces O (S*Lr+1..S*(Lr+Lo)) of
    the same users, on the same calendar days listed in ``info_time.csv``.

    Each set's random stream is ``default_rng([seed, team, data_no])`` and the
    calendar days come from ``default_rng([seed, 0, 0])``, so a set's bytes do
    not depend on how many other sets are generated. Same seed, same bytes.

    The files are written into a staging folder beside ``out_dir`` (``.<name>.staging-*``), manifest
    last, and only a complete round is moved in (:func:`_publish`): a run that fails on any set leaves
    ``out_dir`` as it was (absent, or with its earlier files) and no staging folder.

    Args:
        model: a trained model of any method (``synth.methods``; its grid shape must match ``grid``).
        out_dir: output folder (created).
        teams: number of participating teams tau.
        users: m virtual users per set; ref_days, org_days: Lr, Lo.
        seed: master seed.
        pool_days: calendar days the sporadic days are drawn from (default
            ``1.5 * (Lr + Lo)``, the contest script's 60 days for 40).
        grid: the contest grid for ``info_region.csv`` (default: the model's
            training grid, :meth:`PPMTFModel.grid`).
        slots, slot_start_minute, slot_minutes: the contest's time slots.
        day_split: ``"chronological"`` (reference = the earlier days) or
            ``"random"``; see :func:`draw_days`.
        progress: ``progress(sets_done, n_sets, message)``.
        synth_options: the method's generation options (PPMTF+: :class:`synth.ppmtf_plus.Synthesizer`'s ``gamma``,
            ``home_minutes``, ...; sglt and coloc: their ``GENERATION_DEFAULTS`` keys).
    """
    progress = progress or no_progress
    if grid is None:
        grid = model.grid()
    if pool_days is None:
        pool_days = default_pool_days(ref_days, org_days)
    synth = make_synthesizer(model, slots=slots, slot_start_minute=slot_start_minute,
                             slot_step_minutes=slot_minutes, **synth_options)
    axis = round_time_axis(ref_days, org_days, seed=seed, pool_days=pool_days, slots=slots,
                           slot_start_minute=slot_start_minute, slot_minutes=slot_minutes, day_split=day_split)
    manifest = round_manifest(model, synth, grid, axis, teams, users=users, seed=seed, pool_days=pool_days,
                              day_split=day_split)
    target = Path(out_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    # A fresh name made with mkdir (not mkdtemp's private mode), so the moved folder has the usual permissions.
    out = target.parent / f".{target.name}.staging-{os.getpid()}-{secrets.token_hex(4)}"
    out.mkdir()
    try:
        _write_round(model, synth, out, grid, axis, manifest, teams, users=users, ref_days=ref_days,
                     org_days=org_days, seed=seed, progress=progress)
        _publish(out, target)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return manifest


def _write_round(model, synth, out: Path, grid: Grid, axis: TimeAxis, manifest: dict, teams: int, *, users: int,
                 ref_days: int, org_days: int, seed: int, progress: Progress) -> None:
    """Write the round's files into the folder ``out``: the grid, the time axis, every set of
    ``manifest["sets"]`` (filling each entry with its file names and report) and ``manifest.json`` last,
    with every other file's SHA-256 and size in bytes (``manifest["files"]``)."""
    grid.write_info_region(out / "info_region.csv")
    axis.write_info_time(out / "info_time.csv")

    jobs = round_sets(teams)
    progress(0, len(jobs), "generating datasets")
    for n, entry in enumerate(manifest["sets"]):
        team, d, flag = entry["team"], entry["data"], entry["flag"]
        entry.update(generate_set(model, synth, out, team, d, flag, users=users, ref_days=ref_days,
                                  org_days=org_days, seed=seed))
        progress(n + 1, len(jobs), f"team {team:03d} data{d:02d} {flag} ({entry['role']})")

    manifest["files"] = {p.name: dict(sha256=_sha256(p), size=p.stat().st_size)
                         for p in sorted(out.iterdir()) if p.name != "manifest.json" and p.is_file()}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n",
                                       encoding="utf-8")


def _publish(staging: Path, target: Path) -> None:
    """Move a complete round from the folder ``staging`` to ``target`` (same parent, so renames).

    An absent or empty ``target`` is replaced by one rename of the folder, atomic. A ``target`` that
    already holds files keeps them, and each staged file replaces its namesake by one rename, the
    manifest last: a reader that finds the new manifest finds every file it lists."""
    if target.is_dir() and not any(target.iterdir()):
        target.rmdir()
    if not target.exists():
        os.replace(staging, target)
        return
    for path in sorted(staging.iterdir(), key=lambda p: p.name == "manifest.json"):
        os.replace(path, target / path.name)
