"""``python manage.py simulate_contest``: a whole contest played by simulated teams through the real pipeline.

See :mod:`contest.services.simulation` for what is played. Examples::

    python manage.py simulate_contest                              # 4 teams, 100 users, jobs run here
    python manage.py simulate_contest --workers 2                  # 2 worker processes on the judge's queues, 2 on the teams'
    python manage.py simulate_contest --teams 20 --users 2000 --days 20 --workers 2   # the 2019 size
    python manage.py simulate_contest --external-workers           # workers already running (docker compose)

Prints a progress bar per stage, then the stage table (wall time, peak memory
of this process and of the workers) and ``whole round: <seconds> s``, the
judge's wall time for the last round (the teams' own computing excluded).
"""
from __future__ import annotations

import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from contest.celery import app as celery_app
from contest.services.simulation import ANONYMIZER_CHOICES, DEFAULT_ANONYMIZERS, DEFAULT_ATTACKS, Plan, Simulation
from contest.workers import start_contest_workers, stop_process_groups


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


class Command(BaseCommand):
    help = "Create a contest and play it with simulated teams through the real services and job queue."

    def add_arguments(self, parser):
        parser.add_argument("--teams", type=int, default=4)
        parser.add_argument("--users", type=int, default=100, help="users per data set (2019: 2000)")
        parser.add_argument("--days", type=int, default=2, help="days of reference and of original traces (2019: 20)")
        parser.add_argument("--rounds", type=int, default=1)
        parser.add_argument("--open-rounds", type=int, default=0,
                            help="leave the last rounds generated but open to uploads (not played)")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--synthesizer", default="city", help="city (built-in model) or ppmtf")
        parser.add_argument("--anonymizers", default=",".join(DEFAULT_ANONYMIZERS),
                            help=f"comma-separated, from {', '.join(ANONYMIZER_CHOICES)}")
        parser.add_argument("--attacks", default=",".join(DEFAULT_ATTACKS), help="comma-separated registered attacks")
        parser.add_argument("--attack-share", type=float, default=0.5,
                            help="share of the other teams' sets each team attacks")
        parser.add_argument("--invalid-share", type=float, default=0.1,
                            help="share of anonymized uploads preceded by a broken file")
        parser.add_argument("--slug", default="", help="the contest's slug (default: sim-<size>-<time>)")
        parser.add_argument("--workers", type=int, default=0,
                            help="start a Celery worker with this many processes on the judge's queues and one "
                                 "with as many on the teams' queue; 0 runs every job in this process")
        parser.add_argument("--external-workers", action="store_true",
                            help="use workers already running on this database and broker (start none)")
        parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds a stage may take")

    def handle(self, *args, **opts):
        try:
            plan = Plan(teams=opts["teams"], users=opts["users"], days=opts["days"], rounds=opts["rounds"],
                        seed=opts["seed"], anonymizers=_names(opts["anonymizers"]), attacks=_names(opts["attacks"]),
                        attack_share=opts["attack_share"], invalid_share=opts["invalid_share"],
                        synthesizer=opts["synthesizer"], slug=opts["slug"],
                        open_rounds=opts["open_rounds"])
            plan.check()
        except (ValueError, LookupError) as exc:
            raise CommandError(str(exc)) from None
        workers, procs = opts["workers"], []
        eager = celery_app.conf.task_always_eager
        if workers < 0:
            raise CommandError("--workers must be 0 or more")
        try:
            if opts["external_workers"]:
                mode = "workers already running"
            elif workers:
                log_dir = Path(settings.VAR_DIR) / "logs"
                self.stdout.write(f"starting workers (logs in {log_dir}/simulate-*.log) ...")
                procs = start_contest_workers(workers, log_dir, "simulate", teams_processes=workers)
                mode = f"{workers} worker process(es) on the judge's queues + {workers} on the teams'"
            else:
                celery_app.conf.task_always_eager = True
                mode = "jobs run in this process"
            self.stdout.write(f"simulate_contest ({mode})")
            worker_pids = (lambda: [p.pid for p in procs]) if procs else None
            sim = Simulation(plan, log=self.stdout.write, progress=self._bar, worker_pids=worker_pids,
                             timeout=opts["timeout"])
            report = sim.run()
        finally:
            celery_app.conf.task_always_eager = eager
            stop_process_groups(procs, grace=10)
        for line in report.summary_lines():
            self.stdout.write(line)

    def _bar(self, total: int, description: str):
        return tqdm(total=total, desc=description, file=sys.stderr, leave=False, dynamic_ncols=True,
                    disable=None)  # None: no bar when stderr is not a terminal (logs, CI)
