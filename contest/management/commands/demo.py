"""``python manage.py demo``: a ready demo contest with a web server and a real judge worker.

Idempotent: migrates, sets up the demo contest (:func:`contest.services.demo.setup_demo`:
created from ``contest/demo.yaml`` if it does not exist, both rounds' data
generated, round 1 played through and published, round 2 open), then starts a Celery worker and beat (subprocesses) and the web
server on 127.0.0.1:$PORT (default 8000), prints the logins, and the URL to open once the server answers, and
stops everything on Ctrl-C.

The web server runs with ``DEBUG`` off (``--insecure`` so that it still serves the static files), as a deployed
site does: a mistyped address gets the site's own 404 page, not Django's debug page listing every route.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from contest import queues
from contest.services.demo import setup_demo
from contest.workers import stop_process_groups, worker_command

DEMO_YAML = Path(__file__).resolve().parents[2] / "demo.yaml"


def demo_logins(path: Path = DEMO_YAML) -> list[tuple[str, str, str]]:
    """Every account of the demo contest file as (username, password, role): organizers, then team members.

    Read from ``contest/demo.yaml`` itself, so the printed list cannot drift from the accounts the demo creates.
    """
    spec = yaml.safe_load(path.read_text())
    organizers = set(spec.get("contest", {}).get("organizers") or [])
    out = [(u["username"], u["password"], "organizer (judge)" if u["username"] in organizers else "user")
           for u in spec.get("users") or []]
    for team in spec.get("teams") or []:
        for m in team.get("members") or []:
            out.append((m["username"], m["password"], f"team {team['name']} {m.get('role', 'member')}"))
    return out


def demo_mail_folder() -> Path:
    """Where the demo's web server and workers write the mail they send (``TRACECUP_MAIL_DIR``)."""
    return Path(settings.TRACECUP_MAIL_DIR or Path(settings.VAR_DIR) / "mail").resolve()


#: How long web, worker and beat get to stop after SIGTERM before their process groups are killed; the
#: worker's warm shutdown would otherwise wait for its running jobs (the sweep requeues them later).
STOP_GRACE_SECONDS = 6.0


#: A worker or beat that exits is restarted, up to MAX_RESTARTS times within RESTART_WINDOW_SECONDS.
MAX_RESTARTS = 5
RESTART_WINDOW_SECONDS = 60.0


#: How long the web server may take to answer its first request (runserver imports the whole site first,
#: about 5-25 s on a busy 2-core machine) before the demo gives up on it.
WEB_START_SECONDS = 180.0


def web_answers(base: str) -> bool:
    """True once the web server at ``base`` answers HTTP (/healthz; any status means it listens)."""
    try:
        urllib.request.urlopen(f"{base}/healthz", timeout=2).close()  # noqa: S310 - our own http://127.0.0.1 server
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


class _Stop(Exception):
    """Raised in the main thread by SIGTERM / SIGHUP."""


def _raise_stop(signum, frame):
    raise _Stop(signum)


class Command(BaseCommand):
    help = "Set up the demo contest and run web + worker + beat until Ctrl-C or SIGTERM."

    def add_arguments(self, parser):
        parser.add_argument("--no-serve", action="store_true", help="only set up the demo data, start nothing")
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))

    def handle(self, *args, **opts):
        call_command("migrate", interactive=False, verbosity=0)
        contest = self._setup()
        port = opts["port"]
        base = f"http://127.0.0.1:{port}"
        self._print_logins(contest, base)
        if opts["no_serve"]:
            return
        self._serve(port, base)

    def _setup(self):
        return setup_demo(log=self.stdout.write)

    def _print_logins(self, contest, base):
        w = self.stdout.write
        w("")
        w(f"TraceCup demo contest '{contest.name}'")
        w(f"  public pages:   {base}/c/{contest.slug}/   (leaderboard: {base}/c/{contest.slug}/leaderboard/)")
        w(f"  REST API:       {base}/api/contests/   docs: {base}/api/docs/   schema: {base}/api/schema/")
        # The demo organizer is an organizer of the contest, not a Django superuser: the admin refuses it.
        w(f"  organizer console: {base}/console/  (log in as the organizer below)")
        w(f"  Django admin:   {base}/admin/  (a superuser only: make one with "
          "`.venv/bin/python manage.py createsuperuser` and log in as that user)")
        if not os.environ.get("EMAIL_URL"):  # with EMAIL_URL the mail is really sent
            w(f"  mail (password resets, announcements): written to {demo_mail_folder()}/, one file a message")
        w("  logins (username / password):")
        for username, password, role in demo_logins():
            w(f"    {username:10s} / {password:16s} {role}")
        w("")

    def _serve(self, port, base):
        # The site's mail goes to a folder the banner names (contest.mail_folder), unless EMAIL_URL sends it.
        env = dict(os.environ, PYTHONUNBUFFERED="1", TRACECUP_MAIL_DIR=str(demo_mail_folder()))
        root = settings.BASE_DIR
        py = sys.executable
        cmds = {
            # One worker per kind of work (contest.queues): a team's upload is scored by its own
            # worker, never behind the judge's attacks, generation or results on the other.
            "worker-interactive": worker_command(queues.DEFAULT_QUEUE, 1, f"teams{os.getpid()}"),
            "worker-judge": worker_command(queues.JUDGE_QUEUES, 1, f"judge{os.getpid()}"),
            "beat": [py, "-m", "celery", "-A", "contest", "beat", "-l", "INFO"],
            "web": [py, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload", "--insecure"],
        }
        web_env = dict(env, DEBUG="0")
        procs = {}
        log_dir = Path(settings.VAR_DIR) / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        # SIGTERM (a service manager, `kill`, make passing it on) stops everything like Ctrl-C does.
        previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
        # A command started in the background by a shell without job control (`sh -c 'make demo &'`, a CI
        # script) inherits SIGINT as ignored, and Python then keeps it ignored: `kill -INT` would do nothing.
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            def start(name):
                with open(log_dir / f"demo-{name}.log", "a") as log:
                    # own process group, so Ctrl-C in the terminal reaches us first and we stop them in order
                    run_env = web_env if name == "web" else env
                    return subprocess.Popen(cmds[name], cwd=root, env=run_env, stdout=log, stderr=subprocess.STDOUT,  # noqa: S603 - the demo's own commands (cmds above), argument lists
                                            start_new_session=True)
            for name in cmds:
                procs[name] = start(name)
            self.stdout.write(f"workers (teams' uploads; judge), beat and web started (logs in {log_dir}); "
                              "waiting for the web server to answer ...")
            self.stdout.flush()
            if not self._wait_for_web(procs["web"], base, log_dir):
                return
            self.stdout.write(f"open {base}/  -- Ctrl-C stops")
            self.stdout.flush()
            restarts: dict[str, list[float]] = {name: [] for name in cmds}
            while True:
                for name, p in list(procs.items()):
                    if p.poll() is None:
                        continue
                    self.stderr.write(f"{name} exited with {p.returncode}; see {log_dir}/demo-{name}.log")
                    # A worker or beat that died (lost its broker, killed) is started again, as compose's
                    # restart policy does; one that keeps dying, or the web server, ends the demo.
                    recent = [t for t in restarts[name] if t > time.monotonic() - RESTART_WINDOW_SECONDS]
                    if name == "web" or len(recent) >= MAX_RESTARTS:
                        return
                    restarts[name] = recent + [time.monotonic()]
                    procs[name] = start(name)
                    self.stderr.write(f"{name} restarted")
                time.sleep(0.5)
        except (KeyboardInterrupt, _Stop):
            self.stdout.write("stopping ...")
        finally:
            for sig in previous:
                signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C or SIGTERM must not interrupt the stopping
            stop_process_groups(list(procs.values()), grace=STOP_GRACE_SECONDS)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.stdout.write("stopped web, workers and beat")

    def _wait_for_web(self, web: subprocess.Popen, base: str, log_dir: Path) -> bool:
        """Wait until the web server answers (the URL is printed only then: opened earlier, it would fail);
        False, with the reason, when it exits or does not answer within ``WEB_START_SECONDS``."""
        deadline = time.monotonic() + WEB_START_SECONDS
        while not web_answers(base):
            if web.poll() is not None:
                self.stderr.write(f"web exited with {web.returncode}; see {log_dir}/demo-web.log")
                return False
            if time.monotonic() > deadline:
                self.stderr.write(f"web did not answer within {WEB_START_SECONDS:.0f} s; see {log_dir}/demo-web.log")
                return False
            time.sleep(0.25)
        return True
