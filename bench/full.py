"""``make bench-full``: a 2019-size round through the real pipeline, then the pages under load.

1. **Whole round.** ``simulate_contest`` at the 2019 size (20 teams, 2000
   users, 20 + 20 days, two challenges) with 2 worker processes on the judge's
   queues and 2 on the teams' (as docker-compose runs them): generation, 40 uploads scored, pseudonymization, the
   six judge attacks on every valid set, the teams' cross attacks scored, the
   results with the fairness check and the analyses, published. Two rounds are
   created; the second is generated and left open, so a team can upload during
   the load test (its generation is not part of the round's figure).
2. **Pages under load.** The web server as docker-compose runs it serves the
   published contest: nginx from ``deploy/nginx.conf.template`` (where nginx is
   installed; ``--no-front`` without it) before gunicorn's 3 sync workers
   (``--web-workers``, ``--web-threads``);
   ``--clients`` concurrent connections request the public pages (five in six
   of them, without a session) and the team dashboard (one in six, signed in as
   members of four teams) for ``--seconds`` while an 80 MB anonymized set is
   uploaded through the API and scored by the teams' worker. ``--pages-only``
   runs this step alone again on the contest an earlier run left in the database
   (a few minutes instead of half an hour). The load client is
   wrk (Debian's ``wrk``, C, ``bench/wrk.lua``), which leaves the two
   cores to the server; without it, an asyncio client (httpx) in this process,
   which costs about 5 ms of CPU per request itself and so measures the client too.

3. **Scaling** (issue 23). Before the whole round, the same round is played twice on one worker that
   serves every queue, with ``--compare-processes`` (1) and with ``--workers`` (2) processes, and the
   table ``scaling`` gives each stage's wall time with each, the speed-up and the stage's jobs (the target
   is 1.7 on every stage whose jobs can run side by side; results' two jobs come one after the other).
   One worker for every queue, so that "1 process" is one process: in the deployment of step 1 a stage
   that uses both queues (uploads scored on the teams' queue, their privacy previews on the judge's)
   already runs on two. Then ``simulate_contest`` plays one round at a small
   size (``--growth-users`` users, ``--growth-days`` days) for each team count of ``--growth`` (5, 10, 20,
   40) and the table ``growth`` gives each stage's wall time per team count and its growth exponent
   (time ~ teams^k, least squares on the log-log points: about 1 for the judge's work on sets, about 2
   for the cross attacks), so an organizer can size a deployment. Beside the attack-scoring stage it
   prints the judge's pure scoring time of the same attacks (``pure_attack_scoring_seconds``: the
   scoring library's functions in this one process, no job or message) and the stage's wall time over
   it. ``--growth-only`` runs this table alone (``--growth 5,10,20,40,80``: minutes, not half an hour).

The embedded default (SQLite, filesystem broker) runs in a private folder;
with ``DATABASE_URL`` and ``CELERY_BROKER_URL`` set it runs on PostgreSQL and
Redis. The output ends with the lines ``whole round: <s> s``,
``public pages p95: <ms> ms`` and ``team dashboard p95: <ms> ms``.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
from tqdm import tqdm

from bench.common import PUBLIC_PAGES, TEAM_PAGES, page_load, prepare, signed_in_cookies, start_web
from scoring.algorithms.registry import get
from scoring.scores import utility
from scoring.traces import Traces


def large_valid_upload(grid, truth, *, target_bytes: int, s_req: float, convention: str, lambda_u: float,
                       seed: int = 1) -> tuple[bytes, str, float]:
    """An anotraces file of about ``target_bytes`` that scores valid: the 2019 "A2-4-4-0" (MRLH(4,4), 16 x 16
    blocks of 256 regions) on the whole traces of a seeded share of the users, the others' events exact
    (A1), the share chosen for the size.

    (The whole set in 8 x 8 blocks with 55 % deletions, the 86 MB upload of an earlier run, scored
    s_U below s_req: the load test then never scored a large valid set.) Returns (CSV bytes, name, s_U).
    """
    from contest.services import data  # local: the models load once main() has set Django up on the bench's database

    def rows(name: str, users: np.ndarray, **params) -> list[bytes]:
        part = Traces(truth.user_ids[users], truth.time_ids, truth.regions[users])
        return data.anotraces_csv(get(name).run(grid, part, seed=seed, **params)).split(b"\n")[1:-1]

    m, L = truth.regions.shape
    blocks = {"mu_x": 4, "mu_y": 4, "lambda": 0.0}
    exact = rows("A1-none", np.arange(m))
    probe = min(m, 10)
    per_user_block = sum(len(r) + 1 for r in rows("A2-MRLH", np.arange(probe), **blocks)) / probe
    per_user_exact = sum(len(r) + 1 for r in exact) / m
    n = int(np.clip(round((target_bytes - per_user_exact * m) / max(per_user_block - per_user_exact, 1.0)), 0, m))
    # A blocked user's events score about 0 and an exact one's 1: past (1 - s_req) of the users blocked the
    # set is invalid, so a small contest gets a smaller valid upload instead of an invalid one.
    n = min(n, int(m * (1.0 - s_req) * 0.9))
    chosen = np.sort(np.random.default_rng(seed).choice(m, size=n, replace=False))
    block_rows = rows("A2-MRLH", chosen, **blocks)
    out = list(exact)
    for k, user in enumerate(chosen.tolist()):
        out[user * L:(user + 1) * L] = block_rows[k * L:(k + 1) * L]
    content = b"\n".join([b"reg_id", *out, b""])
    s_u = utility(grid, truth, data.anotraces(content, grid, truth), convention=convention, lambda_u=lambda_u)
    name = f"A2-4-4-0-on-{n}-of-{m}-users.csv"
    if s_u < s_req:
        raise RuntimeError(f"the load test's upload {name} would score s_U = {s_u:.4f} < s_req = {s_req}")
    return content, name, s_u


#: A stage of more than one job should be at least this much faster with 2 judge processes than with 1.
SPEED_UP_TARGET = 1.7


def _round_stages(report, round_number: int = 1) -> dict:
    """stage name -> Stage of the judge's stages of one round of a simulation report."""
    return {s.name: s for s in report.stages if s.judge and s.round == round_number}


def scaling_lines(reports: dict[int, object], round_number: int = 1) -> list[str]:
    """The table of each judge stage's wall time per number of worker processes (``reports``: processes ->
    simulation Report of the same round), with the speed-up of the most processes over the fewest."""
    counts = sorted(reports)
    low, high = counts[0], counts[-1]
    stages = {n: _round_stages(reports[n], round_number) for n in counts}
    head = "".join(f" {f'{n} proc. s':>10}" for n in counts)
    lines = [f"scaling (round {round_number}): wall seconds on one worker serving every queue, per number of "
             "processes",
             f"{'stage':<24} {'jobs':>5}{head} {'speed-up':>9}"]
    totals = dict.fromkeys(counts, 0.0)
    for name, stage in stages[high].items():
        times = {n: stages[n][name].seconds for n in counts if name in stages[n]}
        for n, t in times.items():
            totals[n] += t
        speed = times[low] / times[high] if times.get(high) else float("nan")
        target = (" [jobs in sequence]" if stage.side_by_side <= 1 else
                  f" [>= {SPEED_UP_TARGET}]" if speed >= SPEED_UP_TARGET else f" [< {SPEED_UP_TARGET}: missed]")
        cells = "".join(f" {times[n]:>10.1f}" if n in times else f" {'-':>10}" for n in counts)
        lines.append(f"{name:<24} {stage.jobs:>5}{cells} {speed:>9.2f}{target}")
    cells = "".join(f" {totals[n]:>10.1f}" for n in counts)
    lines.append(f"{'whole round':<24} {'':>5}{cells} {totals[low] / totals[high]:>9.2f}")
    return lines


def growth_exponent(teams: list[int], seconds: list[float]) -> float:
    """k of time ~ teams^k: the least-squares slope of log(seconds) on log(teams)."""
    x, y = np.log(np.asarray(teams, dtype=float)), np.log(np.maximum(np.asarray(seconds, dtype=float), 1e-3))
    if len(x) < 2:
        return float("nan")
    return float(np.polyfit(x, y, 1)[0])


def growth_lines(reports: dict[int, object], size: str, pure: dict[int, float] | None = None) -> list[str]:
    """The table of each judge stage's wall time per number of teams (``reports``: teams -> Report of one
    round), with its growth exponent; ``pure`` (teams -> seconds, :func:`pure_attack_scoring_seconds`)
    adds the judge's pure scoring time of the attacks beside the attack-scoring stage, and the stage's
    wall time over it."""
    counts = sorted(reports)
    stages = {n: _round_stages(reports[n]) for n in counts}
    head = "".join(f" {f'{n} teams':>9}" for n in counts)
    lines = [f"growth ({size}): wall seconds per number of teams; k of time ~ teams^k",
             f"{'stage':<24}{head} {'k':>6}  jobs at {counts[-1]} teams"]
    names = list(stages[counts[-1]])
    for name in names + ["whole round"]:
        if name == "whole round":
            times = [sum(s.seconds for s in stages[n].values()) for n in counts]
            jobs = ""
        else:
            times = [stages[n][name].seconds for n in counts]
            jobs = str(stages[counts[-1]][name].jobs)
        cells = "".join(f" {t:>9.1f}" for t in times)
        lines.append(f"{name:<24}{cells} {growth_exponent(counts, times):>6.2f}  {jobs}")
        if name == "attack scoring" and pure and all(n in pure for n in counts):
            cells = "".join(f" {pure[n]:>9.1f}" for n in counts)
            lines.append(f"{'  pure judge, 1 process':<24}{cells} {growth_exponent(counts, [pure[n] for n in counts]):>6.2f}")
            ratios = "".join(f" {t / max(pure[n], 1e-3):>9.2f}" for n, t in zip(counts, times, strict=True))
            lines.append(f"{'  wall / pure':<24}{ratios} {'':>6}  [< {PURE_RATIO_TARGET:g} at 40 teams]")
    return lines


#: Attack scoring's wall time at 40 teams should be less than this many times the judge's pure scoring time.
PURE_RATIO_TARGET = 2.0


def pure_attack_scoring_seconds(contest, round_number: int = 1) -> float:
    """The judge's own work on a round's attack uploads, timed in one process with the scoring library's
    functions: each target's secrets (ID table, original traces) read once, then every attack's file read,
    parsed and scored. No job row, message, claim or stored score: what attack scoring would cost without
    the platform's per-job overhead. Seconds (CPU-bound, one core).

    Timed in a child process at the workers' niceness (``TRACECUP_WORKER_NICE``), as the workers score: on
    cores that other work shares, a process at niceness 10 gets a fraction of what this one gets, and the
    two times would not compare."""
    import multiprocessing  # local: only this step forks

    from django.conf import settings  # local: Django is set up by main()
    from django.db import connections  # local: the same
    connections.close_all()  # the child opens its own connection
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child() -> None:
        if settings.TRACECUP_WORKER_NICE > 0:
            os.nice(settings.TRACECUP_WORKER_NICE)
        send.send(_pure_scoring(contest, round_number))
    process = context.Process(target=child)
    process.start()
    seconds = receive.recv()
    process.join()
    return seconds


def _pure_scoring(contest, round_number: int) -> float:
    """:func:`pure_attack_scoring_seconds` in this process."""
    from contest.models import Attack  # local: the models load once main() has set Django up
    from contest.services import storage  # local: the same
    from scoring import io as sio  # local: with the models above, only this timing step needs them
    from scoring.errors import ValidationError  # local: the same
    from scoring.uncertainty import scored_attack  # local: the same
    from scoring.vocabulary import AttackKind  # local: the same
    grid = contest.grid()
    attacks = (Attack.objects.filter(target__dataset__round__contest=contest, target__dataset__round__number=round_number)
               .select_related("file", "target__ptable", "target__dataset__original").order_by("target_id", "pk"))
    t0 = time.perf_counter()
    secrets: dict[int, tuple] = {}
    for attack in attacks:
        if attack.target_id not in secrets:
            target = attack.target
            secrets[attack.target_id] = (sio.read_ptable(storage.read_csv_bytes(target.ptable))[1],
                                         sio.read_traces(storage.read_csv_bytes(target.dataset.original), grid))
        true_users, truth = secrets[attack.target_id]
        csv = storage.read_csv_bytes(attack.file)
        try:
            if attack.kind == Attack.ETABLE:
                scored_attack(AttackKind.REIDENTIFICATION, grid, sio.read_etable(csv, len(true_users), contest.users_per_set),
                              true_users=true_users, lambda_t=contest.lambda_t, hospital_weight=contest.hospital_weight)
            else:
                scored_attack(AttackKind.TRACE_INFERENCE, grid, sio.read_etraces(csv, grid, truth), truth=truth,
                              lambda_t=contest.lambda_t, hospital_weight=contest.hospital_weight)
        except ValidationError:
            pass  # rejected: its parse was the judge's work
    return time.perf_counter() - t0


def _play(plan, processes: int, logs: Path, tag: str, one_worker: bool = False):
    """Play ``plan`` through ``simulate_contest``'s simulation on freshly started workers: ``processes`` on
    the judge's queues and as many on the teams' (where uploads and attacks are scored), or with
    ``one_worker`` a single worker of ``processes`` serving every queue; returns (report, the running
    workers)."""
    from contest.queues import ALL_QUEUES  # local: after main() has set Django up (the bench's database)
    from contest.services.simulation import Simulation  # local: the same
    from contest.workers import start_contest_workers, start_worker, stop_process_groups  # local: the same
    if one_worker:
        logs.mkdir(parents=True, exist_ok=True)
        procs = [start_worker(ALL_QUEUES, processes, f"{tag}{os.getpid()}", logs / f"{tag}.log")]
    else:
        procs = start_contest_workers(processes, logs, tag, teams_processes=processes)
    try:
        report = Simulation(plan, log=lambda line: print(line, flush=True),
                            progress=lambda total, desc: tqdm(total=total, desc=desc, file=sys.stderr, leave=False,
                                                              disable=None),
                            worker_pids=lambda: [p.pid for p in procs[:2]]).run()
    except BaseException:
        stop_process_groups(procs, grace=10)
        raise
    return report, procs


def pages_under_load(contest, procs: list, args, logs: Path) -> dict:
    """Step 2: gunicorn serves ``contest`` (published, its last round open) while wrk loads the public pages
    and the team dashboard and an 80 MB valid set is uploaded and scored by the running workers ``procs``
    (stopped at the end with the web server, whatever fails); prints the table and returns the summary
    (group -> figures)."""
    from rest_framework.authtoken.models import Token  # local: the models load once main() has set Django up

    from contest.models import AnonymizedSet, Membership  # local: the same
    from contest.services import data  # local: the same
    from contest.workers import resident_mb, stop_process_groups  # local: the same
    slug = contest.slug
    try:  # the workers (and the web server) stop whatever fails below
        # ----- pages under load while an 80 MB upload is scored
        members = [Membership.objects.filter(team__contest=contest, team__number=n).select_related("user", "team")
                   .order_by("pk").first() for n in range(1, min(4, args.teams) + 1)]
        ds, member = _upload_target(contest, members)
        token = Token.objects.get_or_create(user=member.user)[0].key
        grid = contest.grid()
        # About 80 MB plain (the size of the 2019 "A2-4-4-0" upload the issue names; MRLH(4,4) on this data
        # is 380 MB, over the contest's 200 MB limit), and valid, so that scoring a large valid set is loaded.
        big, big_name, big_s_u = large_valid_upload(grid, data.traces(ds.original, grid), target_bytes=80 * 2**20,
                                                    s_req=contest.s_req, convention=contest.utility_convention,
                                                    lambda_u=contest.lambda_u)
        big_label = f"{len(big) / 2**20:.0f} MB upload ({big_name}, s_U {big_s_u:.4f})"
        base, front, web = start_web(args, logs, procs, slug)
        public_paths = [p.format(slug=slug) for p in PUBLIC_PAGES]
        team_paths = [p.format(slug=slug) for p in TEAM_PAGES]
        for path in public_paths:  # warm up: one request each (imports, first queries)
            assert httpx.get(base + path, timeout=60).status_code == 200, path  # noqa: S101 - a benchmark's own sanity check; benchmarks never run under -O
        team_cookies = signed_in_cookies(base, members, team_paths[0])  # a signed-in member of each of four teams
        team_connections = max(1, args.clients // 6)
        use_wrk = shutil.which("wrk") is not None

        upload_result = {}

        def upload() -> None:
            t0 = time.perf_counter()
            r = httpx.post(f"{base}/api/datasets/{ds.pk}/anonymized-sets/", headers={"Authorization": f"Token {token}"},
                           files={"file": (big_name, big, "application/octet-stream")}, timeout=300)
            upload_result["answer"] = (r.status_code, time.perf_counter() - t0, r.content)

        sender = threading.Thread(target=upload)
        client = "wrk" if use_wrk else "httpx asyncio client in this process (apt-get install wrk for a lighter one)"
        print(f"# load: {args.clients} connections for {args.seconds:.0f} s ({args.clients - team_connections} on "
              f"{len(public_paths)} public pages, {team_connections} on the team dashboard of {len(team_cookies)} "
              f"members) to {front}, client {client}; a {big_label} scored meanwhile",
              flush=True)
        sender.start()
        summary = page_load(base, public_paths, team_paths, team_cookies, clients=args.clients, seconds=args.seconds,
                            out=logs / "wrk")
        sender.join()
        status, _seconds, body = upload_result.get("answer", (None, 0.0, b""))
        if status != 202:
            raise RuntimeError(f"the upload during the load test was answered {status}: {body[:500]!r}")
        aset = AnonymizedSet.objects.filter(dataset=ds).order_by("-pk").first()
        wait_until = time.time() + 600
        while aset.status == AnonymizedSet.PENDING and time.time() < wait_until:
            time.sleep(0.5)
            aset.refresh_from_db()
        scored_after = (aset.scored_at - aset.created_at).total_seconds() if aset.scored_at else None
        if aset.status != AnonymizedSet.VALID:
            raise RuntimeError(f"the {big_label} sent during the load test scored {aset.status}, not valid")
        web_mb = resident_mb(web.pid)
    finally:
        stop_process_groups(procs, grace=10)

    print(f"\n{'pages':<8} {'requests':>9} {'req/s':>7} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'errors':>7}")
    for group in ("public", "team"):
        g = summary[group]
        print(f"{group:<8} {g['requests']:>9.0f} {g['rate']:>7.1f} {g['p50']:>7.0f} {g['p95']:>7.0f} "
              f"{g['p99']:>7.0f} {g['errors']:>7.0f}")
    status, upload_s, _body = upload_result["answer"]
    scored = f"{scored_after:.1f} s after it was stored" if scored_after is not None else "(not scored)"
    print(f"{big_label}: answered {status} in {upload_s:.1f} s, scored {aset.status} {scored}; "
          f"web master {web_mb:.0f} MB")
    return summary


def _upload_target(contest, members) -> tuple:
    """The open round's data set that the load test's upload goes to, and the member who sends it: the first
    of ``members``' teams' challenge-1 and -2 sets whose upload limit is not reached (``--pages-only`` runs
    again on the same contest)."""
    from contest.models import Dataset  # local: the models load once main() has set Django up
    from contest.services.uploads import counted_anonymized_sets  # local: the same
    for m in members:
        for ds in Dataset.objects.select_related("original", "round").filter(
                round__contest=contest, round__number=contest.rounds.count(), team=m.team).order_by("challenge"):
            if counted_anonymized_sets(ds) < contest.anonymized_upload_limit:
                return ds, m
    raise RuntimeError(f"the upload limit of every set of teams 1-{len(members)} in {contest.slug}'s last round is "
                       "reached: play a new round (make bench-full without --pages-only)")


def growth_table(growth: list[int], args, logs: Path, show: bool = True) -> list[str]:
    """Step 3's growth runs: one small round (``--growth-users`` users, ``--growth-days`` days) per team count
    of ``growth`` on freshly started workers, each followed by the judge's pure scoring time of its attacks
    (:func:`pure_attack_scoring_seconds`); returns the table's lines (none for fewer than two counts),
    printed with ``show``."""
    from contest.services.simulation import Plan  # local: after main() has set Django up
    from contest.workers import stop_process_groups  # local: the same
    by_teams, pure = {}, {}
    for teams in growth:
        print(f"# growth: {teams} teams x {args.growth_users} users x {args.growth_days}+{args.growth_days} days "
              f"on {args.workers} judge processes", flush=True)
        small = Plan(teams=teams, users=args.growth_users, days=args.growth_days, rounds=1, seed=2019,
                     slug=f"growth-{teams}t-{args.growth_users}u-{int(time.time())}")
        by_teams[teams], growth_procs = _play(small, args.workers, logs, "bench-growth")
        stop_process_groups(growth_procs, grace=10)
        pure[teams] = pure_attack_scoring_seconds(by_teams[teams].contest)
        print(f"# {teams} teams: attack scoring {_round_stages(by_teams[teams])['attack scoring'].seconds:.1f} s, "
              f"the judge's pure scoring of the same attacks {pure[teams]:.1f} s", flush=True)
    if len(by_teams) < 2:
        return []
    lines = growth_lines(by_teams, f"{args.growth_users} users x {args.growth_days}+{args.growth_days} days, "
                                   f"{args.workers} judge processes", pure)
    if show:
        print("\n" + "\n".join(lines))
    return lines


def main(argv=None) -> int:  # noqa: C901 - one linear script of measured steps, each a few lines
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teams", type=int, default=20)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--days", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2,
                        help="worker processes on the judge's queues, and as many on the teams' queue")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--web-workers", type=int, default=3, help="gunicorn worker processes (docker-compose: 3)")
    parser.add_argument("--bulk-workers", type=int, default=2,
                        help="worker processes of the gunicorn for bodies of 1 MB or more (docker-compose's "
                             "web-bulk: 2; 0: one gunicorn for everything)")
    parser.add_argument("--web-threads", type=int, default=1,
                        help="threads per gunicorn worker (1: sync workers, as docker-compose runs them)")
    parser.add_argument("--no-front", dest="front", action="store_false",
                        help="the load straight to gunicorn, without nginx in front (as without nginx installed)")
    parser.add_argument("--folder", default="", help="keep the bench's files here (default: a temporary folder)")
    parser.add_argument("--compare-processes", type=int, default=1,
                        help="processes of the scaling table's first run, on one worker serving every queue; "
                             "the second has --workers (0: no scaling table)")
    parser.add_argument("--growth", default="5,10,20,40", help="team counts of the growth table ('' for none)")
    parser.add_argument("--growth-users", type=int, default=100, help="users per data set of the growth runs")
    parser.add_argument("--growth-days", type=int, default=2, help="days of the growth runs")
    parser.add_argument("--growth-only", action="store_true",
                        help="only the growth table (step 3's small rounds, one per team count of --growth), without "
                             "the scaling table, the whole round and the pages: minutes instead of half an hour")
    parser.add_argument("--pages-only", action="store_true",
                        help="only step 2, on the newest contest an earlier run of this command left in the database "
                             "(its last round open): the pages under load again in a few minutes")
    args = parser.parse_args(argv)
    growth = [int(n) for n in args.growth.split(",") if n.strip()]
    folder, where = prepare(args, "tracecup-bench-full-")
    from django.core.management import call_command  # local: after django.setup() above

    from contest.models import Contest  # local: after django.setup() above
    from contest.services.simulation import Plan  # local: after django.setup() above
    from contest.workers import start_contest_workers, stop_process_groups  # local: after django.setup() above

    print(f"# bench-full: {args.teams} teams x {args.users} users x {args.days}+{args.days} days on {where}; "
          f"judge on {args.workers} worker processes, uploads and attacks scored on {args.workers}", flush=True)
    call_command("migrate", interactive=False, verbosity=0)
    logs = folder / "logs"
    if args.pages_only:
        contest = Contest.objects.filter(slug__startswith=f"bench-{args.teams}t-{args.users}u-").exclude(
            slug__regex=r"-\d+p-").order_by("-pk").first()
        if contest is None:
            raise SystemExit(f"no contest of an earlier bench-full of {args.teams} teams x {args.users} users in "
                             "this database: run make bench-full first")
        print(f"# the pages under load on {contest.slug}", flush=True)
        summary = pages_under_load(contest, start_contest_workers(args.workers, logs, "bench-pages",
                                                                  teams_processes=args.workers), args, logs)
        print(f"public pages p95: {summary['public']['p95']:.0f} ms")
        print(f"team dashboard p95: {summary['team']['p95']:.0f} ms")
        return 0
    if args.growth_only:
        growth_table(growth, args, logs)
        return 0
    by_processes = {}
    if args.compare_processes and args.compare_processes != args.workers:
        for processes in (args.compare_processes, args.workers):
            print(f"# the same round on one worker of {processes} process(es) serving every queue, for the "
                  "scaling table", flush=True)
            compare = Plan(teams=args.teams, users=args.users, days=args.days, rounds=1, seed=2019,
                           slug=f"bench-{args.teams}t-{args.users}u-{processes}p-{int(time.time())}")
            by_processes[processes], compare_procs = _play(compare, processes, logs, f"bench-compare-{processes}",
                                                           one_worker=True)
            stop_process_groups(compare_procs, grace=10)
        print(f"# the round on {args.workers} judge processes and {args.workers} for the teams' queue", flush=True)
    plan = Plan(teams=args.teams, users=args.users, days=args.days, rounds=2, open_rounds=1, seed=2019,
                slug=f"bench-{args.teams}t-{args.users}u-{int(time.time())}")
    report, procs = _play(plan, args.workers, logs, "bench")  # kept for the load test: the upload is scored
    summary = pages_under_load(report.contest, procs, args, logs)

    growth_lines_ = growth_table(growth, args, logs, show=False)

    for line in report.summary_lines()[1:-1]:
        print(line)
    if len(by_processes) > 1:
        print("\n" + "\n".join(scaling_lines(by_processes)))
    if growth_lines_:
        print("\n" + "\n".join(growth_lines_))
    print(f"whole round: {report.whole_round_seconds():.1f} s")
    print(f"public pages p95: {summary['public']['p95']:.0f} ms")
    print(f"team dashboard p95: {summary['team']['p95']:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
