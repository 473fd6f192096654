"""Limits hold under concurrency: 20 simultaneous uploads never exceed them (SQLite and PostgreSQL)."""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from contest.models import AnonymizedSet, Attack, Dataset, Phase, PublicSet
from contest.services import data, judge, uploads
from contest.services.generation import generate_round_data
from contest.services.setup import create_contest
from tests.contest.conftest import anonymize_csv, contest_spec, move_phase, user

pytestmark = pytest.mark.django_db(transaction=True)


def _hammer(n, fn):
    """Run ``fn`` in ``n`` threads released at once; returns (successes, LimitReached count, other errors)."""
    barrier = threading.Barrier(n)
    ok, limited, errors = [], [], []

    def worker():
        try:
            barrier.wait()
            ok.append(fn())
        except uploads.LimitReached:
            limited.append(1)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return ok, limited, errors


@pytest.fixture
def contest_generated():
    from contest.celery import app
    app.conf.task_always_eager = False  # only the counting is under test; jobs stay queued
    contest = create_contest(contest_spec(slug="race", extra={"judge_attacks": ["I1-rand"]}))
    generate_round_data(contest.rounds.get())
    yield contest
    app.conf.task_always_eager = True


@pytest.mark.slow  # twenty threads' real transactions: make test runs it, make check does not
def test_twenty_simultaneous_anonymized_uploads_respect_the_limit(contest_generated, monkeypatch):
    monkeypatch.setattr("contest.services.jobs.send", lambda job: None)
    ds = Dataset.objects.get(round__contest=contest_generated, number=1, challenge=1)
    content = anonymize_csv(ds)
    member = user("alpha1")
    ok, limited, errors = _hammer(20, lambda: uploads.submit_anonymized_set(
        user=member, dataset=ds, content=content, name="a.csv").pk)
    assert not errors, errors
    assert len(ok) == 10 and len(limited) == 10
    seqs = sorted(AnonymizedSet.objects.filter(dataset=ds).values_list("seq", flat=True))
    assert seqs == list(range(1, 11))


@pytest.mark.slow  # twenty threads' real transactions: make test runs it, make check does not
def test_twenty_simultaneous_attacks_respect_two_per_target(contest_generated, monkeypatch):
    monkeypatch.setattr("contest.services.jobs.send", lambda job: None)
    contest = contest_generated
    ds = Dataset.objects.get(round__contest=contest, number=1, challenge=1)
    uploads.score_anonymized_set(uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds,
                                                               content=anonymize_csv(ds), name="a.csv"))
    rnd = contest.rounds.get()
    judge.close_anonymization(rnd)
    move_phase(rnd, Phase.ATTACK, -1, 5)
    target = PublicSet.objects.get(dataset=ds)
    beta = user("beta1").memberships.get().team
    content = data.etable_csv(list(range(1, contest.users_per_set + 1)))
    member = user("beta1")
    ok, limited, errors = _hammer(20, lambda: uploads.submit_attack(
        user=member, attacker=beta, target=target, kind="etable", content=content, name="e.csv").pk)
    assert not errors, errors
    assert len(ok) == 2 and len(limited) == 18
    assert Attack.objects.filter(attacker=beta, target=target, kind="etable").count() == 2
