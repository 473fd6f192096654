"""The demo contest of ``python manage.py demo``: round 1 played through, round 2 open.

:func:`setup_demo` creates the contest from ``contest/demo.yaml`` (built-in
city model, 3 teams, small sizes), generates both rounds' data and plays
round 1 as the teams and the judge would: every team uploads anonymized sets
made by the sample anonymizers (one of them below s_req), the anonymization
phase closes (pseudonymize + judge attacks), the teams upload cross attacks
made by the sample attacks, and the results are computed and published. Round
2 stays in its anonymization phase, so a team member has something to upload
to; the teams other than Alpha (the one a person tries the demo as) have
uploaded their sets there, so that when it closes there are other teams' sets
to attack, not only the benchmark. Every public page then shows real data.

Each step is idempotent (it looks at what is already stored), so running the
setup again, or after an interruption, completes what is missing and changes
nothing else. Round 1's phases lie in the past: the uploads are made with
``now`` inside their phase window, as they would have been at the time. The
work runs in this process through the same services the worker's jobs call
(scoring is idempotent, so the queued jobs of the uploads find them scored).
"""
from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

from django.utils import timezone

from contest.models import AnonymizedSet, Attack, Contest, Dataset, Membership, Phase, PublicSet, Round
from contest.services import data, judge, results, uploads
from contest.services.generation import generate_round_data
from contest.services.setup import create_contest_from_yaml
from scoring.algorithms.registry import get

DEMO_FILE = Path(__file__).resolve().parents[1] / "demo.yaml"
DEMO_SLUG = "demo"

#: Round 1 uploads, per (team number, challenge): (sample anonymizer, parameters), in upload order.
#: The final choice is the last upload; Gamma's challenge-2 set (kRR eps=2) is below s_req.
DEMO_UPLOADS = {
    (1, 1): [("A2-MRLH", {"mu_x": 2, "mu_y": 2, "lambda": 0.5}), ("A6-kmeans", {"k": 10})],
    (1, 2): [("A2-MRLH", {"mu_x": 1, "mu_y": 1, "lambda": 0.1})],
    (2, 1): [("A3-kRR", {"eps": 10.0})],
    (2, 2): [("A6-kmeans", {"k": 10}), ("A2-MRLH", {"mu_x": 1, "mu_y": 1, "lambda": 0.1})],
    (3, 1): [("A3-kRR", {"eps": 8.0})],
    (3, 2): [("A3-kRR", {"eps": 2.0})],
}

#: Final-round uploads of the teams the person trying the demo plays against (team 1, Alpha, is theirs), made
#: while its anonymization phase is open, so that when it closes Alpha has the other teams' sets to attack, as
#: in a played contest, not only the benchmark. All valid (s_U >= s_req).
DEMO_FINAL_UPLOADS = {
    (2, 1): [("A3-kRR", {"eps": 10.0})],
    (2, 2): [("A2-MRLH", {"mu_x": 1, "mu_y": 1, "lambda": 0.1})],
    (3, 1): [("A6-kmeans", {"k": 10})],
    (3, 2): [("A3-kRR", {"eps": 10.0})],
}

#: Round 1 cross attacks every team uploads against every other team's public sets.
DEMO_ATTACKS = (("I2-VisitProb", Attack.ETABLE), ("T2-VisitProb", Attack.ETRACES))


def setup_demo(log=print) -> Contest:
    """Create (if absent) and complete the demo contest; returns it. ``log`` receives progress lines."""

    contest = Contest.objects.filter(slug=DEMO_SLUG).first()
    if contest is None:
        log("creating the demo contest ...")
        contest = create_contest_from_yaml(DEMO_FILE.read_text(encoding="utf-8"))
    else:
        # A second `make demo` continues the contest of the first (its uploads, results and accounts).
        log(f"reusing the demo contest created {contest.created_at:%Y-%m-%d %H:%M} UTC in this database "
            f"(with the default settings: var/); `make demo-reset` starts afresh")
    rounds = list(contest.rounds.order_by("number"))
    for rnd in rounds:
        if not Dataset.objects.filter(round=rnd).exists():
            t0 = time.time()
            generate_round_data(rnd)
            log(f"  {rnd.name}: {Dataset.objects.filter(round=rnd).count()} datasets generated "
                f"in {time.time() - t0:.0f} s")
    if results.published_snapshot(contest) is None:
        t0 = time.time()
        play_round(rounds[0], log=log)
        results.publish_results(contest, user=_organizer(contest))
        log(f"  {rounds[0].name} played through and results published in {time.time() - t0:.0f} s")
    if len(rounds) > 1:
        upload_other_teams(rounds[-1], log=log)
    return contest


def _organizer(contest):
    return contest.organizers.order_by("pk").first()


def _member(team):
    return Membership.objects.filter(team=team).select_related("user").order_by("pk").first().user


def _during(phase: Phase):
    """A moment inside ``phase``'s window: an hour after it opened (or its middle if shorter)."""
    return phase.opens_at + min(timedelta(hours=1), (phase.closes_at - phase.opens_at) / 2)


def upload_sets(rnd: Round, plan: dict, *, now, log=print) -> None:
    """Upload and score the anonymized sets of ``plan`` ({(team number, challenge): [(sample anonymizer,
    parameters), ...]}) in ``rnd`` at ``now`` (inside its anonymization phase), the last of each the team's final
    choice; a data set that already has an upload is left as it is (a second run adds nothing)."""
    contest = rnd.contest
    grid, axis = contest.grid(), rnd.time_axis()
    for (number, challenge), sets in plan.items():
        ds = Dataset.objects.select_related("team", "original", "round__contest").get(
            round=rnd, kind=Dataset.TEAM, number=number, challenge=challenge)
        if AnonymizedSet.objects.filter(dataset=ds).exists():
            continue
        user = _member(ds.team)
        truth = data.traces(ds.original, grid)
        for i, (name, params) in enumerate(sets):
            alg = get(name)
            anon = alg.run(grid, truth, seed=contest.seed + 1000 * (rnd.number - 1) + 100 * number + 10 * challenge + i,
                           **{**alg.axis_params(axis), **params})
            aset = uploads.submit_anonymized_set(user=user, dataset=ds, content=data.anotraces_csv(anon),
                                                 name=f"anotraces_{ds.label}_{name}.csv", now=now)
            aset = uploads.score_anonymized_set(aset)
        uploads.select_anonymized_set(user=user, aset=aset, now=now)
        log(f"  {ds.label}: {len(sets)} anonymized set(s), final s_U = {aset.s_u:.3f} ({aset.status})")


def upload_other_teams(rnd: Round, *, log=print) -> None:
    """The other teams' uploads of the open final round (:data:`DEMO_FINAL_UPLOADS`), made now; nothing once
    its anonymization phase is not open (a later run of the demo after the phase moved on)."""
    anon_phase = Phase.objects.get(round=rnd, kind=Phase.ANONYMIZATION)
    now = timezone.now()
    if anon_phase.is_open(now) and rnd.generated_at is not None:
        upload_sets(rnd, DEMO_FINAL_UPLOADS, now=now, log=log)


def play_round(rnd: Round, *, log=print) -> None:
    """Upload the demo teams' anonymized sets and attacks for ``rnd`` and run the judge on them."""

    contest = rnd.contest
    grid = contest.grid()
    axis = rnd.time_axis()
    anon_phase = Phase.objects.get(round=rnd, kind=Phase.ANONYMIZATION)
    attack_phase = Phase.objects.get(round=rnd, kind=Phase.ATTACK)

    if anon_phase.closed_at is None:
        upload_sets(rnd, DEMO_UPLOADS, now=_during(anon_phase), log=log)

    public = judge.close_anonymization(rnd, user=_organizer(contest))
    for ps in public:
        judge.run_judge_attacks(ps)
    log(f"  {rnd.name}: anonymization closed, {len(public)} sets pseudonymized and attacked by the judge")

    targets = [ps for ps in PublicSet.objects.filter(dataset__round=rnd, dataset__kind=Dataset.TEAM)
               .select_related("dataset", "pubtraces", "dataset__reference")]
    for team in contest.teams.order_by("number"):
        user = _member(team)
        for ps in targets:
            if ps.dataset.team_id == team.pk or Attack.objects.filter(attacker=team, target=ps).exists():
                continue
            reference = data.traces(ps.dataset.reference, grid)
            pub = data.pubtraces(ps.pubtraces, grid)
            for name, kind in DEMO_ATTACKS:
                alg = get(name)
                estimate = alg.run(grid, reference, pub, seed=contest.seed + team.number,
                                   **alg.axis_params(axis))
                content = data.etable_csv(estimate) if kind == Attack.ETABLE else data.etraces_csv(estimate)
                attack = uploads.submit_attack(user=user, attacker=team, target=ps, kind=kind, content=content,
                                               name=f"{kind}_{ps.dataset.label}_{name}.csv",
                                               now=_during(attack_phase))
                uploads.score_attack(attack)
    log(f"  {rnd.name}: cross attacks uploaded and scored")
