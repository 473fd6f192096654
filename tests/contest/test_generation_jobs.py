"""A round's generation fans out: one job trains the model, one job per data set generates it (issue 23).

Each set's bytes depend only on the round's seed and the set's name, whichever worker builds it and in
whatever order: the per-set jobs run here in reverse order, each as if on a fresh worker (no model or
synthesizer kept in the process), and their files are compared byte for byte with a whole round written
in one go by ``synth.generate.generate_round`` from the same stored model.
"""
from __future__ import annotations

import hashlib

import pytest
from django.test import Client

from contest.models import AuditLog, Dataset, Job
from contest.services import generation, jobs, storage
from synth.generate import generate_round
from synth.methods import load_model

pytestmark = pytest.mark.django_db


def _fresh_worker():
    """Forget what this process loaded, as another worker process would not have it."""
    generation._MODEL.clear()
    generation._SYNTHESIZER.clear()


@pytest.mark.slow
@pytest.mark.parametrize("synthesizer", ["ppmtf", "city"])
def test_each_set_is_its_own_job_and_its_bytes_depend_only_on_the_seed_and_its_name(make_contest, tmp_path,
                                                                                     synthesizer):
    contest = make_contest(slug=f"fan-{synthesizer}", synthesizer=synthesizer)
    rnd = contest.rounds.get()
    train = jobs.create_job("generate_round", contest=contest, dispatch=False, round_id=rnd.pk)
    assert jobs.execute(train.pk) == Job.SUCCEEDED
    set_jobs = list(Job.objects.filter(kind="generate_dataset").order_by("pk"))
    n_sets = (3 + 3) * 2
    assert len(set_jobs) == n_sets and not Dataset.objects.filter(round=rnd).exists()
    rnd.refresh_from_db()
    assert rnd.generated_at is None                                   # not ready before its last set
    organizer = Client()
    organizer.force_login(contest.organizers.get())
    console = f"/console/{contest.slug}/"
    assert f"generating: 0 of {n_sets} data sets" in organizer.get(console).content.decode()

    for n, job in enumerate(reversed(set_jobs)):                     # any order, any worker
        if n:  # the first on the process that trained the model, the others as on fresh workers
            _fresh_worker()
        assert jobs.execute(job.pk) == Job.SUCCEEDED
        rnd.refresh_from_db()
        assert (rnd.generated_at is not None) == (n == n_sets - 1)
        assert f"({n + 1} of {n_sets} data sets)" in Job.objects.get(pk=job.pk).message   # progress counts sets
        page = organizer.get(console).content.decode()               # so does the organizer's console
        assert (f"generating: {n + 1} of {n_sets} data sets" in page) == (n < n_sets - 1)
    assert Job.objects.filter(kind="round_figures").exists()          # queued once the round is ready
    assert AuditLog.objects.filter(action="generate_round", contest=contest).count() == 1

    assert jobs.execute(jobs.create_job("generate_round", contest=contest, dispatch=False, round_id=rnd.pk).pk) \
        == Job.SUCCEEDED                                             # a re-run adds nothing
    assert Job.objects.filter(kind="generate_dataset").count() == n_sets

    datasets = {(d.number, d.challenge): d for d in Dataset.objects.filter(round=rnd)
                .select_related("reference", "original")}
    assert len(datasets) == n_sets
    if synthesizer == "ppmtf":   # a whole round in one process, in file order, from the same stored model
        model = load_model(storage.read_bytes(rnd.model_file))
        axis = rnd.time_axis()
        manifest = generate_round(model, tmp_path, 3, users=contest.users_per_set, ref_days=rnd.ref_days,
                                  org_days=rnd.org_days, seed=rnd.manifest["seed"], grid=contest.grid(),
                                  slots=axis.slots_per_day, slot_start_minute=axis.start_minute,
                                  slot_minutes=axis.slot_minutes)
        assert manifest["parameters"] == rnd.manifest["parameters"]
        assert manifest["files"] == rnd.manifest["files"]            # every file, info files included
        assert rnd.info_time.sha256 == manifest["files"]["info_time.csv"]["sha256"]
        for entry in manifest["sets"]:
            ds = datasets[(entry["team"], entry["data"])]
            for stored, name in ((ds.reference, entry["reftraces"]), (ds.original, entry["orgtraces"])):
                assert stored.sha256 == hashlib.sha256((tmp_path / name).read_bytes()).hexdigest(), name
    else:                        # the set alone, written again on a fresh worker, is the same bytes
        _fresh_worker()
        for (team, challenge), ds in sorted(datasets.items(), reverse=True):
            names = generation.write_set_files(rnd, team, challenge, tmp_path)
            assert ds.original.sha256 == hashlib.sha256((tmp_path / names["orgtraces"]).read_bytes()).hexdigest()
            assert ds.reference.sha256 == hashlib.sha256((tmp_path / names["reftraces"]).read_bytes()).hexdigest()
