"""simulate_contest (issue 14): a whole contest played by simulated teams through the real pipeline.

The integration test is the issue's CI case: 4 teams, 100 users, two real
workers (the teams' queue and the judge's queues, as the demo runs them) on
the test database and broker, results published with awards.
"""
from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Max, Min

from contest import queues
from contest.models import AnonymizedSet, Attack, Contest, Dataset, Job, JudgeAttackResult, PublicSet, RoundFigures
from contest.services import results, results_snapshot
from contest.services.simulation import JUDGE_STAGES, Plan, Simulation, findings
from tests.worker import worker_env  # noqa: F401  (fixture)


def assert_played(report, plan: Plan) -> None:
    """Everything the simulated round should leave behind, checked in the database."""
    contest = report.contest
    assert not Job.objects.filter(contest=contest, status=Job.FAILED).exists()
    assert not Job.objects.filter(contest=contest, status__in=(Job.QUEUED, Job.RUNNING)).exists()
    played = plan.rounds - plan.open_rounds
    assert Dataset.objects.filter(round__contest=contest, kind=Dataset.TEAM).count() == plan.teams * 2 * plan.rounds
    teams = Dataset.objects.filter(round__contest=contest, kind=Dataset.TEAM, round__number__lte=played)
    # every team uploaded at least one set per challenge; the broken files were rejected for their row count
    assert all(AnonymizedSet.objects.filter(dataset=ds).exists() for ds in teams)
    for broken in AnonymizedSet.objects.filter(dataset__round__contest=contest, file__name__endswith="_broken.csv"):
        assert broken.status == AnonymizedSet.REJECTED and broken.errors[0]["code"] == "row_count_traces"
    # every valid final set (and each challenge's benchmark) pseudonymized and attacked by every judge attack
    public = PublicSet.objects.filter(dataset__round__contest=contest)
    valid_finals = AnonymizedSet.objects.filter(dataset__round__contest=contest, final=True,
                                                status=AnonymizedSet.VALID).count()
    assert public.count() == valid_finals + 2 * played
    assert JudgeAttackResult.objects.filter(public_set__in=public).count() == public.count() * len(
        contest.judge_attacks)
    attacks = Attack.objects.filter(target__dataset__round__contest=contest)
    assert attacks.exists() and not attacks.exclude(status=Attack.VALID).exists()
    # the round's data-only figures (fairness per team data set, sample anonymizers) computed once, by jobs
    parts = (plan.teams * 2 + 1) * plan.rounds
    assert RoundFigures.objects.filter(round__contest=contest).count() == parts
    assert Job.objects.filter(contest=contest, kind="round_figures").count() == parts
    # every stage fans out per set (issue 23): generation, the close, the final sets' analyses
    assert Job.objects.filter(contest=contest, kind="generate_dataset").count() == (plan.teams + 3) * 2 * plan.rounds
    assert Job.objects.filter(contest=contest, kind="close_set").count() == public.count()
    finals = AnonymizedSet.objects.filter(dataset__round__contest=contest, final=True, valid=True)
    assert finals.exists() and not finals.filter(analyses__isnull=True).exists()
    snap = results.published_snapshot(contest)
    assert snap is not None and snap.data["standing"]["final"] == (played == plan.rounds)
    assert snap.data["standing"]["through_round"] == played
    assert {a.award for a in snap.awards.all()} >= {"overall-1", "overall-2", "overall-3",
                                                     "best_anonymizer_reidentification",
                                                     "best_attacker_trace_inference"}
    names = [(s.round, s.name) for s in report.stages]
    for number in range(1, played + 1):
        for stage in JUDGE_STAGES:
            assert (number, stage) in names
    assert report.whole_round_seconds() == pytest.approx(
        sum(s.seconds for s in report.stages if s.round == played and s.name in JUDGE_STAGES))


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_small_contest_runs_through_real_workers_and_publishes_awards(worker_env):
    worker_env.start(concurrency=1, queues=queues.DEFAULT_QUEUE)
    teams_worker = worker_env.proc
    worker_env.start(concurrency=2, queues=queues.JUDGE_QUEUES)
    plan = Plan(teams=4, users=100, days=2, seed=7, invalid_share=0.3, rounds=2, open_rounds=1)
    lines = []
    report = Simulation(plan, log=lines.append, worker_pids=lambda: [teams_worker.pid, worker_env.proc.pid],
                        timeout=600).run()
    assert_played(report, plan)
    # the jobs ran on the workers, not here: each stage measured a worker process
    assert all(s.peak_mb_workers and s.peak_mb_workers > 50 for s in report.stages), report.table()
    assert any("results" in line and "provisional" in line for line in lines)  # round 2 is left open
    # a team's upload to the open round 2, sent while the judge closed round 1, was scored meanwhile
    probe = AnonymizedSet.objects.get(dataset__round__contest=report.contest, file__name__endswith="_probe.csv")
    assert probe.status == AnonymizedSet.VALID and probe.dataset.round.number == 2
    assert report.probe_latency is not None and 0 < report.probe_latency < 60, report.probe_latency
    # the judge's stages time the judge alone: the round's attacks were all stored before the first was sent
    # (jobs.Held), and only the results' jobs run one after the other
    scored = Job.objects.filter(contest=report.contest, kind="score_attack")
    assert scored.aggregate(last=Max("created_at"))["last"] <= scored.aggregate(first=Min("sent_at"))["first"]
    stages = {s.name: s for s in report.stages if s.round == 1 and s.judge}
    assert stages.pop("results").side_by_side == 1
    assert all(s.side_by_side > 1 for s in stages.values()), report.table()
    assert_paper_findings(report)


def assert_paper_findings(report) -> None:
    """Paper 4.2 / Fig. 8 / Appendix E on the simulated contest, at a size where one user is 0.01:
    Cheat(1) nearly perfect against re-identification and no better than no obfuscation against trace
    inference; s_I,min and s_T,min positively correlated over the teams' sets (measured R = 0.85 here,
    paper 0.895); the fairness SD of no obfuscation small (0.05-0.09 at 100 users; paper ~0.01 at 2000)."""
    found = findings(results_snapshot.read(results.published_snapshot(report.contest).data))
    cheat, none = found.cheat, found.none
    assert cheat[0] >= 0.9 and cheat[0] >= none[0] + 0.1, found
    assert cheat[1] <= none[1] + 0.05, found
    assert found.n_sets >= 6 and found.correlation > 0.3, found
    assert set(found.fairness_sd) == {1, 2}
    assert all(0 <= sd < 0.15 for pair in found.fairness_sd.values() for sd in pair), found


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_command_plays_two_rounds_inline_and_prints_the_stage_table():
    out = io.StringIO()
    call_command("simulate_contest", teams=3, users=30, rounds=2, seed=3, slug="sim-cmd", stdout=out)
    text = out.getvalue()
    assert text.rstrip().splitlines()[-1].startswith("whole round: ")
    assert "paper findings (round 2):" in text and "correlation of s_I,min and s_T,min over" in text
    for stage in JUDGE_STAGES + ("anonymize (teams)", "attack (teams)"):
        assert f" {stage} " in text
    contest = Contest.objects.get(slug="sim-cmd")
    assert results.published_snapshot(contest).data["standing"]["through_round"] == 2


@pytest.mark.django_db
@pytest.mark.parametrize("options, message", [
    ({"teams": 1}, "teams: 1 is not between 2 and 200"),
    ({"anonymizers": "A2-MRLH,I2-VisitProb"}, "anonymizers: 'I2-VisitProb' is not one of"),
    ({"attacks": "A3-kRR"}, "attacks: 'A3-kRR' is not an attack"),
    ({"attacks": "I9-nothing"}, "I9-nothing"),
    ({"attack_share": 1.5}, "attack_share and invalid_share are shares between 0 and 1"),
])
def test_the_command_refuses_a_bad_plan_naming_the_option(options, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(")):
        call_command("simulate_contest", stdout=io.StringIO(), **options)
    assert not Contest.objects.exists()
