"""``manage.py demo`` on a fresh var/ directory: sets up, serves, answers, stops on Ctrl-C."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.core.management import call_command

from contest.workers import process_tree
from tests.conftest import demo_state

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.django_db
def test_demo_setup_is_idempotent_and_every_page_has_real_data(client, snapshot_base):
    from django.contrib.auth import get_user_model

    from contest.models import AnonymizedSet, Attack, Award, Contest, Dataset, JudgeAttackResult, ResultsSnapshot
    from contest.services.demo import DEMO_UPLOADS
    out = io.StringIO()
    # the first run's database (setup_demo, as `manage.py demo` runs it; the run builds it once, and
    # test_demo_serves_on_a_fresh_machine runs the command itself on an empty folder)
    demo_state(snapshot_base)
    counts = (AnonymizedSet.objects.count(), Attack.objects.count(), JudgeAttackResult.objects.count(),
              ResultsSnapshot.objects.count())
    call_command("demo", "--no-serve", stdout=out)
    # the second run changes nothing: same uploads, attacks, judge results and one published snapshot
    assert (AnonymizedSet.objects.count(), Attack.objects.count(), JudgeAttackResult.objects.count(),
            ResultsSnapshot.objects.count()) == counts
    assert Contest.objects.filter(slug="demo").count() == 1
    contest = Contest.objects.get(slug="demo")
    # the description stays on the contest page while the phases move on: it says nothing is open "now"
    assert "now" not in contest.description.lower().split() and "is open" not in contest.description
    r1, r2 = contest.rounds.order_by("number")
    assert Dataset.objects.filter(round=r1).count() == Dataset.objects.filter(round=r2).count() == 12
    text = out.getvalue()
    for login in ("organizer", "alice", "bob", "/api/docs/", "/c/demo/", "/console/"):
        assert login in text
    # the second run says it reuses the contest and how to start afresh; the banner sends the organizer
    # to the console and says the Django admin is for a superuser (the demo organizer is refused there)
    assert text.count("reusing the demo contest") == 1 and "make demo-reset" in text
    assert "superuser only" in text and "log in as the organizer after" not in text
    # the banner says where the site's mail goes (password resets, announcements): a folder, not a log
    from django.conf import settings
    assert f"written to {(Path(settings.VAR_DIR) / 'mail').resolve()}/" in text
    assert client.post("/admin/login/?next=/admin/", {"username": "organizer", "password": "organizer-demo"}
                       ).status_code == 200  # the admin's form again: refused

    # round 1 played through: every planned upload scored, one final set below s_req, cross attacks scored
    sets = AnonymizedSet.objects.filter(dataset__round=r1)
    assert sets.count() == sum(len(plan) for plan in DEMO_UPLOADS.values())
    assert not sets.filter(status=AnonymizedSet.PENDING).exists()
    assert sets.filter(final=True, status=AnonymizedSet.INVALID).exists()
    assert sets.filter(final=True, status=AnonymizedSet.VALID).count() >= 3
    assert JudgeAttackResult.objects.filter(public_set__dataset__round=r1).count() >= 3 * len(contest.judge_attacks)
    attacks = Attack.objects.filter(target__dataset__round=r1)
    assert attacks.exists() and not attacks.exclude(status=Attack.VALID).exists()
    assert r1.phases.get(kind="anonymization").closed_at is not None
    assert r2.phases.get(kind="anonymization").is_open()  # the team dashboard has something to upload to

    # the published results are served by the API ...
    snap = ResultsSnapshot.objects.get(contest=contest, published=True)
    board = client.get("/api/contests/demo/leaderboard/").json()
    r1_rows = [row for row in board["team_rounds"] if row["round"] == 1]
    assert sorted(row["team"] for row in r1_rows) == [1, 2, 3]
    assert r1_rows == [row for row in snap.data["team_rounds"] if row["round"] == 1]
    awards = client.get("/api/contests/demo/awards/").json()["awards"]
    assert awards and {a["award"] for a in awards} == set(Award.objects.filter(snapshot=snap)
                                                           .values_list("award", flat=True))
    # ... and by the public pages, no embargo notice anywhere
    responses = {page: client.get(f"/c/demo/{page}") for page in
                 ("", "rules/", "leaderboard/", "attack-matrix/", "awards/", "plots/")}
    assert all(r.status_code == 200 for r in responses.values())
    pages = {page: r.content.decode() for page, r in responses.items()}
    for page, html in pages.items():
        assert "embargoed" not in html, page
    for row in r1_rows:
        assert f"{row['overall']:.4f}" in pages["leaderboard/"]
    for a in awards:
        assert f"{a['value']:.4f}" in pages["awards/"] and a["team_name"] in pages["awards/"]
    assert 'data-chart="heatmap"' in pages["attack-matrix/"] and "I2-VisitProb" in pages["attack-matrix/"]
    # a team member's dashboard offers round 2's upload
    client.force_login(get_user_model().objects.get(username="alice"))
    alpha_r2 = Dataset.objects.get(round=r2, kind=Dataset.TEAM, number=1, challenge=1)
    assert f"/team/datasets/{alpha_r2.pk}/upload/" in client.get("/c/demo/team/").content.decode()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _demo_env(var_dir: Path, port: int | None = None) -> dict:
    """The environment of a demo on its own var/ folder (the embedded default: no DATABASE_URL, no broker URL)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(TRACECUP_VAR_DIR=str(var_dir), PYTHONUNBUFFERED="1")
    if port is not None:
        env["PORT"] = str(port)
    return env


def _start_demo(cmd: list[str], var_dir: Path) -> tuple[subprocess.Popen, int]:
    """Start ``cmd`` (the demo) on the var/ folder ``var_dir`` and a free port; return (process, port) once it serves."""
    port = _free_port()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_demo_env(var_dir, port), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines = []
    # the set-up (two rounds generated, one played) takes 2-4 min on a busy 2-core machine, and the URL is
    # printed only once the web server answers
    deadline = time.time() + 480
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "Ctrl-C stops" in line:
            return proc, port
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail("the demo did not start:\n" + "".join(lines))


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory) -> Path:
    """The var/ folder of this module's first demo: empty until the fresh machine's test has run the demo in it,
    then holding the demo contest that test built, which the later tests copy (:func:`built_demo_var`)."""
    return tmp_path_factory.mktemp("demo") / "var"


@pytest.fixture
def built_demo_var(demo_home, tmp_path) -> Path:
    """A copy of a var/ folder whose demo contest is built: a demo started on it reuses the contest and serves
    within seconds, so the tests of stopping and supervising do not each generate and play it again. Built
    here (``manage.py demo --no-serve``) when the fresh machine's test did not run first."""
    if not (demo_home / "tracecup.sqlite3").exists():
        subprocess.run([sys.executable, "manage.py", "demo", "--no-serve"], cwd=ROOT, env=_demo_env(demo_home),
                       check=True, capture_output=True, timeout=480)
    var = tmp_path / "var"
    shutil.copytree(demo_home, var)
    return var


def _interrupt(proc: subprocess.Popen) -> str:
    """SIGINT to the demo (Ctrl-C); its output once it has exited. A demo that has not stopped within 60 s
    fails the test, after SIGTERM and then SIGKILL, so its web server and workers do not outlive the test."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        tree = process_tree(proc.pid)       # now: children of a demo that exits are no longer below it
        proc.terminate()                    # the demo stops its children on SIGTERM too
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        pytest.fail("the demo was still running 60 s after SIGINT")


def _answers_at_once_with_the_sites_own_404(port: int) -> None:
    """The URL the demo prints opens at once (it is printed only when the server answers), and a mistyped
    address there shows the site's own 404 page, not Django's debug page listing every route."""
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/c/demo/leaderbord/", timeout=10)
        pytest.fail("a mistyped address was answered 200")
    except urllib.error.HTTPError as exc:
        assert exc.code == 404
        page = exc.read().decode()
    assert "There is no such page." in page and "Back to the contests" in page
    assert "URLconf" not in page and "DEBUG = True" not in page and "/static/" in page
    css = re.search(r'href="(/static/[^"]+\.css)"', page).group(1)  # the static files are still served
    assert urllib.request.urlopen(f"http://127.0.0.1:{port}{css}", timeout=10).status == 200


def _contest_slugs(port: int) -> list[str] | None:
    """The slugs ``/api/contests/`` lists, waiting up to 30 s for the web server to answer."""
    for _ in range(60):
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contests/", timeout=5).read()
            return [c["slug"] for c in json.loads(body)]
        except OSError:
            time.sleep(0.5)
    return None


@pytest.mark.integration
def test_demo_serves_on_a_fresh_machine(demo_home):
    # Started the way a shell without job control starts a background command (`sh -c 'make demo &'`, a
    # CI script): with SIGINT ignored, which Python keeps. The demo must still stop on the SIGINT below.
    as_background_job = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                         "os.execv(sys.executable, [sys.executable, 'manage.py', 'demo'])")
    assert not demo_home.exists()  # a fresh machine: no database, no broker folder, nothing
    proc, port = _start_demo([sys.executable, "-c", as_background_job], demo_home)
    try:
        _answers_at_once_with_the_sites_own_404(port)
        assert _contest_slugs(port) == ["demo"]
        token = json.loads(urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{port}/api/auth/token/", data=b"username=alice&password=alice-demo",
            method="POST"), timeout=10).read())["token"]
        assert token
    finally:
        out = _interrupt(proc)
    assert "stopped web, workers and beat" in out
    # no child left behind: the worker's pid files / processes are gone
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert f"teams{proc.pid}@" not in ps and f"judge{proc.pid}@" not in ps


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.integration
def test_make_demo_stops_everything_on_sigterm_within_ten_seconds(built_demo_var):
    """SIGTERM to `make demo` (a service manager's stop): web, both workers (with their pools) and beat all gone in 10 s."""
    # PY: this interpreter; STAMP empty: the environment is already installed
    make, _port = _start_demo(["make", "-s", "demo", f"PY={sys.executable}", "STAMP="], built_demo_var)
    try:
        for _ in range(60):  # the worker forks its pool children after it starts
            everything = set(process_tree(make.pid)) - {make.pid}
            if len(everything) >= 7:  # manage.py demo, web, 2 workers + a pool child each, beat
                break
            time.sleep(0.5)
        assert len(everything) >= 7, everything
        t0 = time.monotonic()
        make.send_signal(signal.SIGTERM)  # to make only, as `kill PID` would
        out, _ = make.communicate(timeout=30)
        left = everything
        while left and time.monotonic() - t0 < 10:
            left = {p for p in left if _alive(p)}
            time.sleep(0.2)
        assert not left, f"still running 10 s after SIGTERM: {left}"
        assert "stopped web, workers and beat" in out, out[-2000:]
    finally:
        try:
            os.killpg(make.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _worker_pid(tag: str) -> int | None:
    """The main process of the demo's worker named ``tag`` (``teams<pid>``), or None (from /proc)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().decode(errors="replace")
            pid = int(cmdline.parent.name)
            if f"{tag}@" in args and os.getpgid(pid) == pid:  # the group leader, not a pool child
                return pid
        except (OSError, ValueError):
            continue
    return None


@pytest.mark.integration
def test_the_demo_restarts_a_worker_that_died(built_demo_var):
    """A worker killed outright (the broker lost, the kernel's OOM killer) is started again by the demo's
    supervisor, as compose's restart policy does, and the demo keeps serving."""
    proc, port = _start_demo([sys.executable, "manage.py", "demo"], built_demo_var)
    try:
        tag = f"teams{proc.pid}"
        deadline = time.time() + 60
        while (first := _worker_pid(tag)) is None and time.time() < deadline:
            time.sleep(0.5)
        assert first is not None
        os.killpg(first, signal.SIGKILL)
        lines, deadline = [], time.time() + 60
        while time.time() < deadline and "worker-interactive restarted" not in "".join(lines):
            lines.append(proc.stdout.readline())
        assert "worker-interactive restarted" in "".join(lines), "".join(lines)
        deadline = time.time() + 60
        while (_worker_pid(tag) in (None, first)) and time.time() < deadline:
            time.sleep(0.5)
        assert _worker_pid(tag) not in (None, first)
        assert proc.poll() is None
        assert _contest_slugs(port) == ["demo"]
    finally:
        out = _interrupt(proc)
    assert "stopped web, workers and beat" in out
    assert _worker_pid(f"teams{proc.pid}") is None
