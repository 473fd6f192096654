"""The test worker's process handling (tests/worker.py): its whole process group is stopped."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from tests import worker


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie waiting for its (dead) parent's reaper counts as gone
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def test_stop_worker_stops_the_process_group(tmp_path):
    """A parent that ignores SIGTERM and its child (like celery's pool) are both gone after stop_worker."""
    pid_file = tmp_path / "child.pid"
    script = ("import signal, subprocess, sys, time\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
              "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    worker._RUNNING.add(proc)
    deadline = time.time() + 20
    while not (pid_file.exists() and pid_file.read_text()):
        assert time.time() < deadline, "the child did not start"
        time.sleep(0.05)
    child = int(pid_file.read_text())
    worker.stop_worker(proc, timeout=1.0)  # SIGTERM ignored by the parent: SIGKILL to the group
    assert proc.poll() is not None and proc not in worker._RUNNING
    deadline = time.time() + 10
    while _alive(child) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(child)
