"""``manage.py demo`` on a fresh var/ directory: sets up, serves, answers, stops on Ctrl-C."""
from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_demo_setup_is_idempotent():
    from contest.models import Contest, Dataset
    out = io.StringIO()
    call_command("demo", "--no-serve", stdout=out)
    call_command("demo", "--no-serve", stdout=out)
    assert Contest.objects.filter(slug="demo").count() == 1
    assert Dataset.objects.filter(round__contest__slug="demo").count() == 12
    text = out.getvalue()
    for login in ("organizer", "alice", "bob", "/api/docs/", "/c/demo/"):
        assert login in text


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.integration
def test_demo_serves_on_a_fresh_machine(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(TRACECUP_VAR_DIR=str(tmp_path / "var"), PORT=str(port), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "manage.py", "demo"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines = []
    try:
        deadline = time.time() + 240
        while time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "Ctrl-C stops" in line:
                break
        assert any("Ctrl-C stops" in l for l in lines), "".join(lines)
        body = None
        for _ in range(60):
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contests/", timeout=5).read()
                break
            except OSError:
                time.sleep(0.5)
        assert body is not None and json.loads(body)[0]["slug"] == "demo"
        token = json.loads(urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{port}/api/auth/token/", data=b"username=alice&password=alice-demo",
            method="POST"), timeout=10).read())["token"]
        assert token
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert "stopped web, worker and beat" in out
    # no child left behind: the worker's pid files / processes are gone
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert f"demo{proc.pid}@" not in ps
