"""Figures of a round's data alone (fairness, sample anonymizers) are computed once per round by jobs
and read by every results snapshot; a change of what they depend on recomputes them (issue 14)."""
from __future__ import annotations

import pytest

from contest.models import Job, RoundFigures
from contest.services import results, round_figures, samples

pytestmark = pytest.mark.django_db


@pytest.fixture
def counted(monkeypatch):
    """Counts the Fig. 8 / fairness evaluations (one per data set and list of anonymizers)."""
    calls = []
    real = samples.evaluate_sample_anonymizers

    def counting(*args, **kwargs):
        calls.append(args[1].label)
        return real(*args, **kwargs)
    monkeypatch.setattr(round_figures, "evaluate_sample_anonymizers", counting)
    return calls


def test_a_job_per_part_stores_the_figures_and_snapshots_read_them(generated, counted,
                                                                   django_capture_on_commit_callbacks):
    rnd = generated.rounds.get()
    with django_capture_on_commit_callbacks(execute=True):
        queued = round_figures.request(rnd)
    parts = sorted([f"fairness-{c}-{t}" for c in (1, 2) for t in (1, 2, 3)] + ["sample_anonymizers"])
    assert sorted(j.args["part"] for j in queued) == parts   # a job per team data set: the workers share them
    assert all(Job.objects.get(pk=j.pk).status == Job.SUCCEEDED for j in queued)
    stored = {f.part: f for f in RoundFigures.objects.filter(round=rnd)}
    assert sorted(stored) == parts
    evaluated = len(counted)
    assert evaluated == 3 * 2 + 1  # each team's data set of both challenges, and the first sample set

    snap = results.snapshot(generated)
    assert len(counted) == evaluated, "the snapshot recomputed a stored figure"
    fairness = snap.data["analyses"]["rounds"]["1"]["fairness"]
    combined = [row for c in (1, 2) for row in round_figures.fairness_rows(
        c, {t: stored[f"fairness-{c}-{t}"].data for t in (1, 2, 3)})]
    assert fairness == combined and len(fairness) == 2 * len(round_figures.FAIRNESS_ANONYMIZERS)
    assert snap.data["sample_anonymizers"]["1"] == stored["sample_anonymizers"].data
    assert [r["label"] for r in fairness[:4]] == [c[0] for c in round_figures.FAIRNESS_ANONYMIZERS]


def test_a_figure_whose_inputs_changed_is_recomputed_not_shown(generated, counted):
    rnd = generated.rounds.get()
    before = round_figures.get_or_compute(rnd, "fairness-1-2")
    assert len(counted) == 1
    round_figures.get_or_compute(rnd, "fairness-1-2")
    assert len(counted) == 1  # stored, inputs unchanged
    generated.judge_attacks = ["I1-rand", "T1-rand"]  # the organizer changes the judge's attacks
    generated.save()
    rnd.refresh_from_db()
    after = round_figures.get_or_compute(rnd, "fairness-1-2")
    assert len(counted) == 2
    assert after != before
    row = RoundFigures.objects.get(round=rnd, part="fairness-1-2")
    assert row.data == after and row.inputs == round_figures.inputs_key(rnd, "fairness-1-2")
