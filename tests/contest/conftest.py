"""Fixtures of the platform tests: a small contest (3 teams, 20 users, 2+2 days) and its data."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests import snapshots

SMALL_USERS = 20


def contest_spec(slug="tc", *, synthesizer="city", users=SMALL_USERS, anon=(-1, 24), attack=(24, 48),
                 upload_limit=10, extra=None):
    """A setup dict; phase windows are hours relative to now."""
    params = {"users_per_set": users, "synthesizer": synthesizer, "anonymized_upload_limit": upload_limit,
              "seed": 12345, "synthesizer_params": {"train_users": 60, "train_days": 4, "K": 4, "sweeps": 3}}
    params.update(extra or {})
    return {
        "version": 1,
        # open to the public at once: the tests visit its pages as teams and visitors (new contests are drafts)
        "contest": {"slug": slug, "name": f"Contest {slug}", "draft": False, "parameters": params,
                    "organizers": ["judge"]},
        "users": [{"username": "judge", "password": "judge-pass"}],
        "rounds": [{"number": 1, "name": "Final", "weight": 1.0, "ref_days": 2, "org_days": 2,
                    "phases": {"anonymization": {"opens": f"now{anon[0]:+d}h", "closes": f"now{anon[1]:+d}h"},
                               "attack": {"opens": f"now{attack[0]:+d}h", "closes": f"now{attack[1]:+d}h"}}}],
        "teams": [{"number": t, "name": name, "members": [{"username": f"{name.lower()}1", "password": "pw"},
                                                          {"username": f"{name.lower()}2", "password": "pw"}]}
                  for t, name in ((1, "Alpha"), (2, "Beta"), (3, "Gamma"))],
    }


@pytest.fixture(autouse=True)
def eager_celery(request):
    """Unit and API tests run queued jobs inline (the integration test uses a real worker)."""
    from contest.celery import app
    if request.node.get_closest_marker("integration"):
        yield
        return
    old = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = old


@pytest.fixture
def make_contest(db):
    from contest.services.setup import create_contest

    def make(**kw):
        return create_contest(contest_spec(**kw))
    return make


@pytest.fixture
def generated(db, snapshot_base):
    """A contest with round 1 generated (built-in city synthesizer), in the anonymization phase.

    Built for real by the first test of the session that asks for it, then laid from its rows
    (tests/snapshots.py): about 0.1 s instead of the generation's seconds."""
    return generated_contest(snapshot_base)


def generated_contest(base):
    """:func:`generated`'s state, for a state built on it (:func:`built_on_generated`)."""
    from contest.services import generation
    from contest.services.setup import create_contest

    def build():
        contest = create_contest(contest_spec())
        generation.generate_round_data(contest.rounds.get())
        return contest
    return snapshots.built_once("generated", build, base)


@pytest.fixture
def closed_unobfuscated(db, snapshot_base, django_capture_on_commit_callbacks):
    """The generated contest after every team uploaded both sets unchanged (A1-none) and the
    anonymization phase closed (pseudonymized, the judge's attacks run): one state for the session."""
    return snapshots.built_once("closed_unobfuscated", lambda: upload_all_and_close(
        generated_contest(snapshot_base), dict.fromkeys((1, 2, 3), ("A1-none", {})),
        django_capture_on_commit_callbacks), snapshot_base)


def built_on_generated(request, name, step):
    """A module's own state: ``step(contest, capture_on_commit)`` played on the generated contest once
    per session (an upload, a close...), its rows laid again in each later test. ``request`` is the
    fixture's; the state is named by its module and ``name``. Returns what ``step`` returned (a model
    instance read anew). The fixture must not also request ``generated``: this lays it."""
    base = request.getfixturevalue("snapshot_base")
    capture = request.getfixturevalue("django_capture_on_commit_callbacks")
    return snapshots.built_once((request.module.__name__, name),
                                lambda: step(generated_contest(base), capture), base)


def user(username):
    from django.contrib.auth import get_user_model
    return get_user_model().objects.get(username=username)


def anonymize_csv(dataset, algorithm="A1-none", seed=1, **params) -> bytes:
    """anotraces bytes of a registered sample anonymizer run on the dataset's original traces."""
    from contest.services import data
    from scoring.algorithms.registry import get
    grid = dataset.round.contest.grid()
    org = data.traces(dataset.original, grid)
    anon = get(algorithm).run(grid, org, seed=seed, **params)
    return data.anotraces_csv(anon)


def move_phase(rnd, kind, opens_hours, closes_hours):
    from contest.models import Phase
    now = timezone.now()
    Phase.objects.filter(round=rnd, kind=kind).update(opens_at=now + timedelta(hours=opens_hours),
                                                       closes_at=now + timedelta(hours=closes_hours))


def upload_all_and_close(contest, algorithms, capture_on_commit):
    """Every team uploads both sets made by ``algorithms[team] = (name, params)``, then the
    anonymization phase closes (pseudonymize + judge attacks). ``capture_on_commit`` is
    pytest-django's ``django_capture_on_commit_callbacks`` so queued jobs run in this process."""
    from contest.models import Dataset, Phase, PublicSet
    from contest.services import judge, uploads
    with capture_on_commit(execute=True):
        for team, (name, params) in algorithms.items():
            for challenge in (1, 2):
                ds = Dataset.objects.get(round__contest=contest, number=team, challenge=challenge)
                uploads.submit_anonymized_set(user=user(f"{ds.team.name.lower()}1"), dataset=ds,
                                              content=anonymize_csv(ds, name, seed=team, **params), name="a.csv")
    rnd = contest.rounds.get()
    move_phase(rnd, Phase.ANONYMIZATION, -3, -1)
    move_phase(rnd, Phase.ATTACK, -1, 24)
    with capture_on_commit(execute=True):
        judge.request_close(rnd)
    assert PublicSet.objects.filter(dataset__round=rnd).exists()
    return contest
