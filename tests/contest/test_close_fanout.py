"""The phase close fans out (issue 23): the close job freezes the final sets and queues one job per set to
publish (pseudonymize, then the judge's attacks) and one per final valid set's analyses; the attack material
is queued once, by the job that pseudonymizes the last set, whatever the order."""
from __future__ import annotations

import pytest

from contest.models import AnonymizedSet, Dataset, Job, JudgeAttackResult, Phase, PublicSet
from contest.services import jobs, uploads
from tests.contest.conftest import anonymize_csv, move_phase, user

pytestmark = pytest.mark.django_db


def test_the_close_queues_a_job_per_set_and_the_material_after_the_last(generated,
                                                                       django_capture_on_commit_callbacks):
    contest = generated
    rnd = contest.rounds.get()
    with django_capture_on_commit_callbacks(execute=True):
        for team, name, params in ((1, "A2-MRLH", {"lambda": 0.1}), (2, "A3-kRR", {"eps": 0.1})):
            for challenge in (1, 2):
                ds = Dataset.objects.get(round=rnd, number=team, challenge=challenge)
                uploads.submit_anonymized_set(user=user(f"{ds.team.name.lower()}1"), dataset=ds, name="a.csv",
                                              content=anonymize_csv(ds, name, seed=team, **params))
    move_phase(rnd, Phase.ANONYMIZATION, -3, -1)
    close = jobs.create_job("close_anonymization", contest=contest, dispatch=False, round_id=rnd.pk)
    assert jobs.execute(close.pk) == Job.SUCCEEDED
    assert AnonymizedSet.objects.filter(dataset__round=rnd, final=True).count() == 4      # frozen at once
    set_jobs = list(Job.objects.filter(kind="close_set").order_by("pk"))
    # team 1's two valid sets and the two benchmark sets; team 2's kRR(0.1) is invalid, team 3 sent nothing
    assert sorted(Dataset.objects.get(pk=j.args["dataset_id"]).label for j in set_jobs) == [
        "team001_data01", "team001_data02", "team004_data01", "team004_data02"]
    assert Job.objects.filter(kind="set_analyses").count() == 2                          # team 1's valid sets
    assert not PublicSet.objects.exists() and not Job.objects.filter(kind="build_bundle").exists()

    for n, job in enumerate(reversed(set_jobs)):
        assert jobs.execute(job.pk) == Job.SUCCEEDED
        last = n == len(set_jobs) - 1
        assert Job.objects.filter(kind="build_bundle").count() == (1 if last else 0)
    assert PublicSet.objects.filter(dataset__round=rnd).count() == 4
    assert JudgeAttackResult.objects.filter(public_set__dataset__round=rnd).count() == 4 * len(contest.judge_attacks)

    again = jobs.create_job("close_anonymization", contest=contest, dispatch=False, round_id=rnd.pk)
    assert jobs.execute(again.pk) == Job.SUCCEEDED                                       # a re-run adds nothing
    assert Job.objects.filter(kind="close_set").count() == 4
    assert PublicSet.objects.filter(dataset__round=rnd).count() == 4
