"""Uploads racing the deadline and the organizer's "close now": nothing stored after the phase closed.

Threads with their own database connections, as gunicorn workers would be; PostgreSQL only (SQLite
serializes every write, so there is no race to test there; CI runs this on PostgreSQL).
"""
from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from contest.models import AnonymizedSet, Dataset, Phase
from contest.services import judge, storage, uploads
from tests.contest.conftest import anonymize_csv

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("the race needs concurrent transactions: run with DATABASE_URL=postgres://... (CI does)")


def _run_all(functions):
    results, start = [None] * len(functions), threading.Barrier(len(functions))

    def run(i, f):
        try:
            start.wait()
            time.sleep(0.1 * i)           # arrivals spread over 2 s, the close among them
            results[i] = f()
        except Exception as exc:  # noqa: BLE001 - the test inspects what each racer got
            results[i] = exc
        finally:
            connections.close_all()
    threads = [threading.Thread(target=run, args=(i, f)) for i, f in enumerate(functions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def test_twenty_parallel_uploads_against_close_now(postgres_only, generated, monkeypatch):
    """Each upload is either stored before the close (and is a candidate for the final set) or refused."""
    contest = generated
    rnd = contest.rounds.get()
    datasets = list(Dataset.objects.filter(round=rnd, kind=Dataset.TEAM).select_related("team"))
    csvs = {ds.pk: anonymize_csv(ds) for ds in datasets}
    slow_store = storage.store_bytes

    def store_slowly(*a, **kw):          # a large file takes a while to insert: widen the window
        time.sleep(0.2)
        return slow_store(*a, **kw)
    monkeypatch.setattr(storage, "store_bytes", store_slowly)
    members = {ds.pk: ds.team.memberships.first().user for ds in datasets}
    racers = [lambda ds=ds: uploads.submit_anonymized_set(user=members[ds.pk], dataset=ds, content=csvs[ds.pk],
                                                          name="race.csv")
              for ds in (datasets * 4)[:20]]
    racers.insert(10, lambda: judge.close_anonymization(rnd))
    results = _run_all(racers)
    phase = Phase.objects.get(round=rnd, kind=Phase.ANONYMIZATION)
    stored = list(AnonymizedSet.objects.filter(dataset__round=rnd))
    refused = [r for r in results if isinstance(r, uploads.RuleViolation)]
    assert phase.closed_at is not None
    assert all(not isinstance(r, Exception) or isinstance(r, uploads.RuleViolation) for r in results), results
    assert len(stored) + len(refused) == 20 and refused and stored
    assert all(a.created_at <= phase.closed_at for a in stored)
    assert all("not open" in str(r) for r in refused)


def test_an_upload_checked_before_the_deadline_but_stored_after_it_is_refused(postgres_only, generated,
                                                                              monkeypatch):
    contest = generated
    rnd = contest.rounds.get()
    ds = Dataset.objects.filter(round=rnd, kind=Dataset.TEAM).select_related("team").first()
    csv = anonymize_csv(ds)
    Phase.objects.filter(round=rnd, kind=Phase.ANONYMIZATION).update(closes_at=timezone.now() + timedelta(seconds=1))
    slow_store = storage.store_bytes
    monkeypatch.setattr(storage, "store_bytes", lambda *a, **kw: (time.sleep(1.5), slow_store(*a, **kw))[1])
    aset = uploads.submit_anonymized_set(user=ds.team.memberships.first().user, dataset=ds, content=csv, name="a.csv")
    phase = Phase.objects.get(round=rnd, kind=Phase.ANONYMIZATION)
    assert aset.created_at < phase.closes_at          # the row carries the time it was checked open at
    monkeypatch.setattr(storage, "store_bytes", slow_store)
    time.sleep(max(0.0, (phase.closes_at - timezone.now()).total_seconds()) + 0.1)
    with pytest.raises(uploads.RuleViolation, match="not open"):
        uploads.submit_anonymized_set(user=ds.team.memberships.first().user, dataset=ds, content=csv, name="b.csv")
    judge.close_anonymization(rnd)
    final = AnonymizedSet.objects.get(dataset=ds, final=True)
    assert final.pk == aset.pk and final.created_at < phase.closes_at


def test_two_scorings_of_one_pending_set_store_one_score(postgres_only, generated, monkeypatch):
    """The close scores the uploads still pending inline while the worker's job may be scoring the same set:
    both read it pending and compute, and the later to store keeps the earlier's outcome (no second score
    row, no second population file, no error for either)."""
    from contest.models import Score, StoredFile
    contest = generated
    ds = Dataset.objects.filter(round=contest.rounds.get(), kind=Dataset.TEAM).select_related("team").first()
    user = ds.team.memberships.first().user
    aset = AnonymizedSet.objects.create(dataset=ds, team=ds.team, seq=1, uploaded_by=user, created_at=timezone.now(),
                                        file=storage.store_bytes(anonymize_csv(ds), "a.csv", user=user))  # its job not run yet
    # the upload's population, and the data set's if it has none yet
    files_before, populations = StoredFile.objects.count(), 1 + (ds.population_id is None)
    both_computed, computed = threading.Barrier(2), uploads.utility_per_event

    def compute_then_wait(*a, **kw):   # each run has read the set pending and computed s_U before either stores
        per_event = computed(*a, **kw)
        both_computed.wait(timeout=30)
        return per_event
    monkeypatch.setattr(uploads, "utility_per_event", compute_then_wait)
    results = _run_all([lambda: uploads.score_anonymized_set(aset), lambda: uploads.score_anonymized_set(aset)])
    assert all(isinstance(r, AnonymizedSet) for r in results), results
    assert {r.status for r in results} == {AnonymizedSet.VALID} and results[0].s_u == results[1].s_u
    assert Score.objects.filter(anonymized_set=aset, metric=Score.UTILITY).count() == 1
    assert StoredFile.objects.count() == files_before + populations   # each population stored once
