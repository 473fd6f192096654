"""The embedded broker (contest.broker): every message delivered whole and once, across processes (issue 25).

kombu's own filesystem channel lets a consumer take a message file between its
creation and its write (it reads ``b""`` and the worker's consumer dies with
``JSONDecodeError``). Here real processes publish and consume at once through
kombu connections on one folder, as the web process and the workers do.
"""
from __future__ import annotations

import multiprocessing as mp
import queue as stdlib_queue

import pytest
from kombu import Connection

from contest import broker
from contest.settings import filesystem_broker_options, make_local_folders

#: Messages per publisher; big enough (about 60 kB each) that a write is not instant.
MESSAGES = 400
PAYLOAD = "x" * 60_000


def _connection(folder, transport):
    return Connection(transport=transport, transport_options=filesystem_broker_options(folder))


def _publish(folder, transport, publisher):
    with _connection(folder, transport) as conn:
        q = conn.SimpleQueue("jobs")
        for i in range(MESSAGES):
            q.put({"publisher": publisher, "n": i, "payload": PAYLOAD})
        q.close()


def _consume(folder, transport, results, stop):
    got, errors = [], []
    with _connection(folder, transport) as conn:
        q = conn.SimpleQueue("jobs")
        while True:
            try:
                message = q.get(timeout=0.05)
            except stdlib_queue.Empty:
                if stop.is_set():
                    break
                continue
            except Exception as exc:  # noqa: BLE001 - what a worker's consumer would die of
                errors.append(repr(exc))
                continue
            body = message.payload
            got.append((body["publisher"], body["n"], len(body["payload"])))
            message.ack()
        q.close()
    results.put((got, errors))


def run_race(folder, transport) -> tuple[list, list]:
    """Two publishers and two consumers on one folder at once; (what was received, consumer errors)."""
    make_local_folders(filesystem_broker_options(folder))
    ctx = mp.get_context("fork")
    results, stop = ctx.Queue(), ctx.Event()
    consumers = [ctx.Process(target=_consume, args=(folder, transport, results, stop)) for _ in range(2)]
    publishers = [ctx.Process(target=_publish, args=(folder, transport, p)) for p in range(2)]
    for p in consumers + publishers:
        p.start()
    for p in publishers:
        p.join(120)
    stop.set()
    got, errors = [], []
    for _ in consumers:
        g, e = results.get(timeout=120)
        got += g
        errors += e
    for p in consumers:
        p.join(30)
    return got, errors


def test_concurrent_publishers_and_consumers_get_every_message_whole_and_once(tmp_path):
    got, errors = run_race(tmp_path / "broker", "contest.broker:FilesystemTransport")
    assert errors == []
    assert sorted(got) == sorted((p, n, len(PAYLOAD)) for p in range(2) for n in range(MESSAGES))
    assert not list((tmp_path / "broker" / "queue").iterdir())  # nothing left behind, no .part file
    assert not (tmp_path / "broker" / "rejected").exists()


def test_the_default_broker_url_uses_the_atomic_transport():
    from kombu.transport import resolve_transport

    from contest.celery import app
    assert resolve_transport("filesystem") is broker.FilesystemTransport
    with app.connection_for_write() as conn:
        if app.conf.broker_url.startswith("filesystem"):
            assert isinstance(conn.transport, broker.FilesystemTransport)


def test_an_unreadable_message_file_is_set_aside_not_fatal(tmp_path):
    folder = tmp_path / "broker"
    make_local_folders(filesystem_broker_options(folder))
    (folder / "queue" / "1_torn.jobs.msg").write_bytes(b"")  # what an older writer or a full disk leaves
    with _connection(folder, "contest.broker:FilesystemTransport") as conn:
        q = conn.SimpleQueue("jobs")
        q.put({"n": 1})
        assert q.get(timeout=1).payload == {"n": 1}
        with pytest.raises(stdlib_queue.Empty):
            q.get(timeout=0.2)
        q.close()
    assert [f.name for f in (folder / "rejected").iterdir()] == ["1_torn.jobs.msg"]
