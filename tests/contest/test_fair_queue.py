"""Fair queues: a worker claims the next job by a database query, not in the broker's order.

The teams' queue serves the teams in turn (the oldest job of the team served least recently), so one
team's burst of uploads never delays another team's first one; within a queue, the deadline's own work
(the close, the judge's attacks) goes before scoring, and scoring before previews (``contest.job_kinds``).
The unit tests claim in this process (``jobs.execute(..., pick=True)``, what a worker does); the
integration test runs a real worker with one process on the teams' queue.
"""
from __future__ import annotations

import contextlib
import threading
import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from contest import job_kinds, queues, selectors
from contest.models import AnonymizedSet, Dataset, Job, PrivacyPreview, Team
from contest.services import jobs, judge, uploads
from contest.services.setup import create_contest
from tests.contest.conftest import anonymize_csv, contest_spec, user
from tests.worker import worker_env  # noqa: F401  (fixture)


def _team(contest, number):
    return Team.objects.get(contest=contest, number=number)


def _ds(contest, team, challenge=1):
    return Dataset.objects.get(round__contest=contest, number=team, challenge=challenge)


def _record_runs(monkeypatch, *kinds) -> list[int]:
    """Replace the handlers of ``kinds`` by one that notes the job it ran; returns the list of job ids."""
    ran: list[int] = []
    for kind in kinds:
        monkeypatch.setitem(jobs._REGISTRY, kind, lambda job, **kw: ran.append(job.pk) or "ran")
    return ran


def _run_all(n: int, any_job: Job) -> None:
    """Deliver ``n`` messages, each a wake-up for ``any_job``'s queue (what a worker does with each)."""
    for _ in range(n):
        jobs.execute(any_job.pk, pick=True)


@pytest.mark.django_db
def test_a_teams_burst_never_delays_another_teams_first_upload(generated, monkeypatch):
    """Ten jobs of team A, then one of team B: B's runs second, then A's in their order."""
    ran = _record_runs(monkeypatch, "score_anonymized")
    alpha, beta = _team(generated, 1), _team(generated, 2)
    burst = [jobs.create_job("score_anonymized", contest=generated, for_team=alpha, dispatch=False, anonymized_set_id=i)
             for i in range(10)]
    single = jobs.create_job("score_anonymized", contest=generated, for_team=beta, dispatch=False, anonymized_set_id=99)
    # the card's places are the claim's order played forward
    places = selectors.queue_places(burst + [single])
    assert places[single.pk]["place"] == 2 and [places[j.pk]["place"] for j in burst] == [1, *range(3, 12)]
    _run_all(11, burst[-1])
    assert ran == [burst[0].pk, single.pk] + [j.pk for j in burst[1:]]
    assert not Job.objects.filter(kind="score_anonymized", status=Job.QUEUED).exists()


@pytest.mark.django_db
def test_teams_are_served_in_turn_and_the_judges_own_jobs_first(generated, monkeypatch):
    """Three teams' jobs interleave by who was served last; a team that was served a minute ago waits
    behind those never served, as does a job without a team (the organizer's): those go oldest first."""
    ran = _record_runs(monkeypatch, "score_anonymized", "score_attack", "email_announcement")
    a, b, c = (_team(generated, n) for n in (1, 2, 3))
    served = jobs.create_job("score_anonymized", contest=generated, for_team=c, dispatch=False, anonymized_set_id=0)
    Job.objects.filter(pk=served.pk).update(status=Job.SUCCEEDED, started_at=timezone.now() - timedelta(minutes=1))
    made = [jobs.create_job("score_anonymized", contest=generated, for_team=t, dispatch=False, anonymized_set_id=i)
            for i, t in enumerate((c, c, a, a, b))]
    mail = jobs.create_job("email_announcement", contest=generated, dispatch=False, announcement_id=1)
    order = [made[2], made[4], mail, made[0], made[3], made[1]]  # a, b, the organizer's (never served); c; a; c
    places = selectors.queue_places(made + [mail])
    assert sorted(places, key=lambda pk: places[pk]["place"]) == [j.pk for j in order]
    _run_all(6, mail)
    assert ran == [j.pk for j in order]


@pytest.mark.django_db
def test_every_claim_takes_the_head_of_the_order_the_card_shows(generated, monkeypatch):
    """A mixed queue (three teams with different histories, the judge's own jobs, three ranks, a burst):
    before each claim, the job claimed is the first of ``jobs.fair_order``, the order the team card plays
    forward. The claim reads the queue by team and rank, the card job by job: they must agree."""
    import random
    kinds = ("score_anonymized", "score_attack", "email_announcement")
    ran = _record_runs(monkeypatch, *kinds)
    rng = random.Random(7)
    teams = [_team(generated, n) for n in (1, 2, 3)]
    for minutes, team in ((3, teams[0]), (1, teams[1])):  # served before, at different times; team 3 never
        done = jobs.create_job("score_anonymized", contest=generated, for_team=team, dispatch=False, anonymized_set_id=0)
        Job.objects.filter(pk=done.pk).update(status=Job.SUCCEEDED, started_at=timezone.now() - timedelta(minutes=minutes))
    made = []
    for i in range(60):
        kind = rng.choice(kinds)
        team = None if kind == "email_announcement" else rng.choice(teams + [teams[2]] * 3)  # team 3's burst
        made.append(jobs.create_job(kind, contest=generated, for_team=team, dispatch=False,
                                    **({"announcement_id": i} if team is None else {"attack_id": i})))
    expected = []
    for _ in made:
        expected.append(jobs.fair_order(queues.DEFAULT_QUEUE)[0][0])
        jobs.execute(made[0].pk, pick=True)
        assert ran[-1] == expected[-1]
    assert sorted(ran) == sorted(j.pk for j in made) and jobs.fair_order(queues.DEFAULT_QUEUE) == []


@contextlib.contextmanager
def _held(job: Job):
    """Another worker in the middle of claiming ``job``: its row locked by a second connection until the end."""
    from django.db import connection, transaction
    held, release = threading.Event(), threading.Event()

    def hold():
        try:
            with transaction.atomic():
                list(Job.objects.select_for_update().filter(pk=job.pk))
                held.set()
                release.wait(10)
        finally:
            connection.close()
    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        yield
    finally:
        release.set()
        holder.join(10)


@pytest.mark.django_db(transaction=True)
def test_a_claim_skips_the_job_another_worker_holds_and_takes_the_next_in_turn(generated):
    """Two workers at once (PostgreSQL's row locks). While one is claiming the head of the queue (team A's
    oldest job), the other claims the next team's turn (B's), not A's next job: two workers on A's burst would
    leave B waiting. But a free worker never leaves a job waiting: with only A's jobs queued it takes A's
    next one, and the judge's own jobs (no team, no turns) go to whichever worker is free, one each (a
    claim that skipped the judge's whole queue behind its held head left a generation job queued for good
    in make bench-full)."""
    from django.db import connection
    if connection.vendor != "postgresql":
        pytest.skip("row locks and SKIP LOCKED are PostgreSQL's; SQLite serializes claims")
    a, b = _team(generated, 1), _team(generated, 2)
    first = jobs.create_job("score_anonymized", contest=generated, for_team=a, dispatch=False, anonymized_set_id=1)
    second = jobs.create_job("score_anonymized", contest=generated, for_team=a, dispatch=False, anonymized_set_id=2)
    other = jobs.create_job("score_anonymized", contest=generated, for_team=b, dispatch=False, anonymized_set_id=3)
    with _held(first):
        assert jobs.claim_next(queues.DEFAULT_QUEUE, "second-worker").pk == other.pk
        assert jobs.claim_next(queues.DEFAULT_QUEUE, "third-worker").pk == second.pk
        assert jobs.claim_next(queues.DEFAULT_QUEUE, "fourth-worker") is None  # only the held one is left
    judge_queue = job_kinds.QUEUE_OF["generate_dataset"]
    made = [jobs.create_job("generate_dataset", contest=generated, dispatch=False, dataset_id=n) for n in range(3)]
    with _held(made[0]):
        assert [jobs.claim_next(judge_queue, f"w{n}").pk for n in range(2)] == [made[1].pk, made[2].pk]


@pytest.mark.django_db
def test_the_close_goes_before_previews_in_the_judges_queue(generated, monkeypatch):
    """Previews queued first, then the close's jobs: a worker of the judge's queue claims the close first."""
    ran = _record_runs(monkeypatch, "privacy_preview", "close_set", "judge_attacks", "set_analyses")
    alpha = _team(generated, 1)
    previews_ = [jobs.create_job("privacy_preview", contest=generated, for_team=alpha, dispatch=False,
                                 anonymized_set_id=i, round_id=0) for i in range(3)]
    analyses = jobs.create_job("set_analyses", contest=generated, dispatch=False, anonymized_set_id=1)
    close = jobs.create_job("close_set", contest=generated, dispatch=False, dataset_id=1)
    attacks = jobs.create_job("judge_attacks", contest=generated, dispatch=False, public_set_id=1)
    _run_all(6, previews_[0])
    assert ran == [close.pk, attacks.pk, analyses.pk] + [p.pk for p in previews_]
    assert job_kinds.rank("close_set") < job_kinds.rank("score_anonymized") < job_kinds.rank("privacy_preview")


@pytest.mark.django_db
def test_a_delivery_claims_only_its_own_queues_jobs(generated, monkeypatch):
    """A wake-up of the teams' queue never runs the judge's job (the queues stay apart), and a message whose
    job another delivery ran, with nothing else queued, does nothing."""
    ran = _record_runs(monkeypatch, "score_anonymized", "close_set")
    close = jobs.create_job("close_set", contest=generated, dispatch=False, dataset_id=1)
    upload = jobs.create_job("score_anonymized", contest=generated, for_team=_team(generated, 1), dispatch=False,
                             anonymized_set_id=1)
    assert jobs.execute(upload.pk, pick=True) == Job.SUCCEEDED
    assert jobs.execute(upload.pk, pick=True) == Job.SUCCEEDED  # a duplicate: nothing left to claim
    assert ran == [upload.pk] and Job.objects.get(pk=close.pk).status == Job.QUEUED


def _upload_scored(contest, team: int, content=None, challenge=1, capture=None) -> AnonymizedSet:
    """An upload of ``team``, scored in this process; its preview job stays queued (not run)."""
    ds = _ds(contest, team, challenge)
    with capture(execute=False) as sends:
        aset = uploads.submit_anonymized_set(user=user(f"{ds.team.name.lower()}1"), dataset=ds, name="a.csv",
                                             content=content or anonymize_csv(ds, "A4-PL", seed=team))
    for send in sends:
        send()
    aset.refresh_from_db()
    return aset


def _preview_job(aset) -> Job:
    return Job.objects.get(kind="privacy_preview", args__anonymized_set_id=aset.pk)


def _card(contest, ds, username) -> str:
    client = Client()
    client.force_login(user(username))
    return client.get(f"/c/{contest.slug}/team/datasets/{ds.pk}/state.json").json()["html"]


def test_a_newer_upload_supersedes_the_older_preview_still_queued(generated, django_capture_on_commit_callbacks):
    first = _upload_scored(generated, 1, capture=django_capture_on_commit_callbacks)
    assert first.status == AnonymizedSet.VALID and _preview_job(first).status == Job.QUEUED
    second = _upload_scored(generated, 1, capture=django_capture_on_commit_callbacks)
    old, new = _preview_job(first), _preview_job(second)
    assert old.superseded and old.status == Job.SUCCEEDED and f"by upload #{second.seq}" in old.message
    assert new.status == Job.QUEUED and new.team_id == second.team_id
    assert jobs.execute(old.pk) == Job.SUCCEEDED and not PrivacyPreview.objects.exists()  # never run
    assert "superseded" in _card(generated, first.dataset, "alpha1")
    # another team's and another data set's previews are left alone
    other = _upload_scored(generated, 1, challenge=2, capture=django_capture_on_commit_callbacks)
    assert _preview_job(other).status == Job.QUEUED and _preview_job(second).status == Job.QUEUED


def test_the_final_set_always_gets_its_preview(generated, django_capture_on_commit_callbacks):
    """The team's chosen set is not superseded by a newer upload; at the close its preview still runs
    (after the close's work: it ranks last), while the newer, not final, one is skipped."""
    chosen = _upload_scored(generated, 1, capture=django_capture_on_commit_callbacks)
    uploads.select_anonymized_set(user=user("alpha1"), aset=chosen)
    newer = _upload_scored(generated, 1, capture=django_capture_on_commit_callbacks)
    assert _preview_job(chosen).status == Job.QUEUED and _preview_job(newer).status == Job.QUEUED
    with django_capture_on_commit_callbacks(execute=False):
        judge.request_close(generated.rounds.get())
    skipped = _preview_job(newer)
    assert skipped.status == Job.SUCCEEDED and "skipped" in skipped.message
    assert jobs.execute(_preview_job(chosen).pk) == Job.SUCCEEDED
    assert PrivacyPreview.objects.filter(anonymized_set=chosen).exists()
    assert not PrivacyPreview.objects.filter(anonymized_set=newer).exists()


def test_choosing_a_superseded_set_queues_its_preview_again(generated, django_capture_on_commit_callbacks):
    first = _upload_scored(generated, 1, capture=django_capture_on_commit_callbacks)
    _upload_scored(generated, 1, capture=django_capture_on_commit_callbacks)
    assert _preview_job(first).superseded
    with django_capture_on_commit_callbacks(execute=False):
        uploads.select_anonymized_set(user=user("alpha1"), aset=first)
    latest = Job.objects.filter(kind="privacy_preview", args__anonymized_set_id=first.pk).order_by("-id").first()
    assert latest.status == Job.QUEUED


def test_the_card_shows_the_place_in_the_queue_and_an_estimate(generated, django_capture_on_commit_callbacks):
    """Team A's three uploads wait, then team B's: B's card says it is second in line, with a wait from the
    measured run times of the kind (mean of the latest runs: 4 s here)."""
    now = timezone.now()
    for seconds in (3, 5):  # two measured runs of the kind
        Job.objects.create(kind="score_anonymized", status=Job.SUCCEEDED, started_at=now - timedelta(seconds=seconds),
                           finished_at=now)
    for _ in range(3):
        with django_capture_on_commit_callbacks(execute=False):
            uploads.submit_anonymized_set(user=user("alpha1"), dataset=_ds(generated, 1), name="a.csv",
                                          content=anonymize_csv(_ds(generated, 1)))
    ds = _ds(generated, 2)
    with django_capture_on_commit_callbacks(execute=False):
        uploads.submit_anonymized_set(user=user("beta1"), dataset=ds, name="b.csv", content=anonymize_csv(ds))
    html = _card(generated, ds, "beta1")
    assert "2 in line, about 8 s" in html  # one job ahead (4 s) and its own (4 s), one process
    assert "3 in line" in _card(generated, _ds(generated, 1), "alpha1")


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_serves_the_teams_in_turn(worker_env):
    """Ten uploads of team A, then one of team B, through the service; then a real worker with one process
    on the teams' queue: B's upload is scored second (first-in first-out scored it eleventh)."""
    contest = create_contest(contest_spec(slug="fair"))
    from contest.services import generation
    generation.generate_round_data(contest.rounds.get())
    a_ds, b_ds = _ds(contest, 1), _ds(contest, 2)
    content = anonymize_csv(a_ds, "A1-none")
    burst = [uploads.submit_anonymized_set(user=user("alpha1"), dataset=a_ds, content=content, name="a.csv")
             for _ in range(10)]
    single = uploads.submit_anonymized_set(user=user("beta1"), dataset=b_ds, content=anonymize_csv(b_ds, "A1-none"),
                                           name="b.csv")
    worker_env.start(concurrency=1, queues=queues.DEFAULT_QUEUE)
    deadline = time.time() + 180
    while AnonymizedSet.objects.filter(status=AnonymizedSet.PENDING).exists():
        assert time.time() < deadline, "the uploads were not scored\n" + worker_env.log()
        time.sleep(0.2)
    order = list(Job.objects.filter(kind="score_anonymized").order_by("started_at")
                 .values_list("args__anonymized_set_id", flat=True))
    assert order.index(single.pk) == 1, order
    assert [pk for pk in order if pk != single.pk] == [a.pk for a in burst]


@pytest.mark.parametrize("finish_after", ["previews_of", "latest_jobs_of"])
def test_a_preview_finishing_while_the_card_is_read_is_shown_or_still_awaited(
        generated, django_capture_on_commit_callbacks, monkeypatch, finish_after):
    """The card's poller stops when the state says nothing is pending, so the state read while the preview
    job finishes must show the preview or say it is still to come. The job is run right after the card's
    first read of previews or preview jobs returns, whichever it reads first: the moment between the two
    reads (a fast preview on a warm worker fell there, and the card stopped polling without it)."""
    aset = _upload_scored(generated, 1, capture=django_capture_on_commit_callbacks)
    job = _preview_job(aset)
    assert job.status == Job.QUEUED
    finished_once: list[str] = []

    def finishing(name):
        original = getattr(selectors, name)

        def read(*args, **kwargs):
            out = original(*args, **kwargs)
            is_preview_read = name == "previews_of" or args[0] == job_kinds.PRIVACY_PREVIEW  # not the scoring jobs'
            if is_preview_read and not finished_once:
                finished_once.append(name)
                assert jobs.execute(job.pk) == Job.SUCCEEDED
            return out
        return read

    monkeypatch.setattr(selectors, finish_after, finishing(finish_after))
    client = Client()
    client.force_login(user("alpha1"))
    state = client.get(f"/c/{generated.slug}/team/datasets/{aset.dataset_id}/state.json").json()
    assert finished_once, "the card read neither previews nor preview jobs"
    assert PrivacyPreview.objects.filter(anonymized_set=aset).exists()
    shown = f'id="preview-ds-{aset.dataset_id}"' in state["html"]
    assert shown or not state["finished"], "the preview is neither shown nor awaited: the poller would stop"
