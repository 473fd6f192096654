"""The privacy preview of an upload: the judge's sample attacks on a team's own set before the deadline.

After an anonymized set is scored valid, a low-priority ``privacy_preview``
job pseudonymizes it privately (the ID table is never stored or shown) and
runs ``scoring.preview.preview`` with the team's own reference traces R, the
contest's judge attacks, clock, judge mode and scoring parameters: what the
2019 teams did by hand with the sample programs. It stores the summary, the
per-user risk CSV and the leak map on a :class:`~contest.models.PrivacyPreview`.

Seeds: every attack runs with the seed the judge's attack will run with on this
dataset's public set (``judge.judge_attack_seeds``), and the private pseudonymization is seeded
per dataset, not per upload, so the same file uploaded twice gets the same preview. The judge
draws its own pseudonyms at the phase close (rules §6), and the pseudonym order moves the random
attacks a little (T2/T3 assign users greedily in pseudonym order), so the preview also runs the
attacks on :data:`DRAWS` - 1 further private pseudonymizations: the judge's figure is one more such
draw, and the card shows the draws and a 95% prediction interval for it (:func:`preview_interval`; the
bare range of 4 draws would hold the judge's figure only 3 times in 5, yet reads as a bound).

Nothing of it enters the results: no Score or JudgeAttackResult row is
written. A phase close pre-empts the previews of sets that are not final: requesting the close
marks them skipped (``judge.request_close``), and such a preview that starts once the phase is closing
does nothing. The final set always gets its preview; it ranks last in the judge's queue, so it runs after
the close's own work. A newer upload's preview supersedes the team's older ones still queued
(``uploads.queue_preview``).
"""
from __future__ import annotations

from django.db import IntegrityError, transaction

import scoring
from contest import job_kinds
from contest.models import AnonymizedSet, PrivacyPreview
from contest.services import data, jobs, storage
from contest.services.job_messages import say
from contest.services.judge import anonymization_closing, final_set_ids, judge_attack_seeds, preview_settings
from scoring.algorithms.registry import judge_defaults
from scoring.preview import PREDICTION_LEVEL, leak_map, per_user_csv, per_user_rows, prediction_interval, preview
from scoring.scores import MEAN_DISTANCE
from scoring.seeds import derived_seed

#: Riskiest users kept in the summary for the team page (the CSV has them all).
TOP_USERS = 10
#: Private pseudonymizations attacked per preview (the shown one and the others of the interval).
DRAWS = 4


def preview_command(contest, ds, seed: int, attack_seeds: dict[str, int] | None = None) -> list[str]:
    """The shell command that prints a preview's figures on a team's computer (``python -m scoring
    preview``): the round's grid and clock files, the team's R and O, its upload saved as
    ``anotraces.csv``, the preview's seed, the attacks' seeds (the judge's, :func:`judge_attack_seeds`)
    and every contest parameter that differs from the default."""
    cmd = ["python", "-m", "scoring", "preview", "--grid", "info_region.csv", "--time", "info_time.csv",
           ds.reference.name, ds.original.name, "anotraces.csv", "--seed", str(seed)]
    if attack_seeds:
        cmd += ["--attack-seeds", ",".join(f"{name}={value}" for name, value in attack_seeds.items())]
    if list(contest.judge_attacks) != [a.name for a in judge_defaults()]:
        cmd += ["--attacks", ",".join(contest.judge_attacks)]
    if contest.judge_attack_mode == "sample_2019":
        cmd.append("--sample-2019")
    for flag, value, default in (("--convention", contest.utility_convention, MEAN_DISTANCE),
                                 ("--s-req", contest.s_req, 0.7), ("--lambda-u", contest.lambda_u, 2.0),
                                 ("--lambda-t", contest.lambda_t, 2.0),
                                 ("--hospital-weight", contest.hospital_weight, 10.0)):
        if value != default:
            cmd += [flag, str(value)]
    return cmd + ["--per-user", "risk.csv"]


def preview_interval(draws: list[dict]) -> dict:
    """{"s_i_min": interval, "s_t_min": interval}: the prediction interval of the judge's figure from the
    preview's pseudonymizations (:func:`scoring.preview.prediction_interval`; None for a kind no attack
    scored), and its ``level``."""
    out = {key: prediction_interval([d[key] for d in draws]) for key in ("s_i_min", "s_t_min")}
    return {"level": PREDICTION_LEVEL, **out}


def risk_order(row: tuple) -> tuple:
    """Sort key of a per-user row, riskiest first: named by more attacks, then smaller trace error."""
    return -row[2], row[3], row[0]


def compute_preview(aset: AnonymizedSet, *, job=None) -> PrivacyPreview | None:
    """Run the preview of ``aset`` once (idempotent); None if it is not valid or the phase is closing."""
    aset = AnonymizedSet.objects.select_related("dataset__round__contest", "dataset__original",
                                                "dataset__reference", "file").get(pk=aset.pk)
    existing = PrivacyPreview.objects.filter(anonymized_set=aset).first()
    if existing is not None or aset.status != AnonymizedSet.VALID:
        return existing
    ds = aset.dataset
    round_, contest = ds.round, ds.round.contest
    if anonymization_closing(round_) and aset.pk not in final_set_ids(round_):  # the final set's always runs
        return None
    grid = contest.grid()
    jobs.progress(job, 0.1, f"preview of {ds.label} #{aset.seq}")
    truth = data.traces(ds.original, grid)
    reference = data.traces(ds.reference, grid)
    anon = data.anotraces(storage.read_csv_bytes(aset.file, contest.upload_size_limit), grid, truth)
    # per dataset, not per upload: the same file gets the same preview; the attacks' seeds are the judge's
    seed = derived_seed(contest.seed, round_.number, ds.label, "preview")
    attack_seeds = judge_attack_seeds(contest, ds)
    settings = preview_settings(contest, round_)
    result = preview(grid, reference, truth, anon, seed=seed, seeds=attack_seeds, **settings)
    draws = [{"seed": seed, "s_i_min": result.s_i_min, "s_t_min": result.s_t_min}]
    for k in range(1, DRAWS):
        jobs.progress(job, 0.1 + 0.8 * k / DRAWS, f"preview of {ds.label} #{aset.seq}: pseudonymization {k + 1}")
        other = preview(grid, reference, truth, anon, seed=derived_seed(seed, "draw", k), seeds=attack_seeds,
                        **settings)
        draws.append({"seed": derived_seed(seed, "draw", k), "s_i_min": other.s_i_min, "s_t_min": other.s_t_min})
    header, rows = per_user_rows(truth, result.attacks)
    leaks = leak_map(grid, truth, anon, result.attacks, axis=settings["axis"])
    top = sorted(rows, key=risk_order)[:TOP_USERS]
    summary = {**result.as_dict(), "version": scoring.__version__, "users": truth.m,
               "attack_seeds": attack_seeds, "draws": draws, "interval": preview_interval(draws),
               "reidentified_users": leaks["users"], "header": list(header), "top_users": [list(r) for r in top]}
    try:
        with transaction.atomic():
            stored = storage.store_bytes(per_user_csv(header, rows), f"preview_{ds.label}_{round_.number:03d}"
                                                                     f"_{aset.seq}.csv")
            return PrivacyPreview.objects.create(
                anonymized_set=aset, summary=summary, per_user=stored, seed=seed,
                leak_map={k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in leaks.items()})
    except IntegrityError:
        return PrivacyPreview.objects.get(anonymized_set=aset)  # a duplicate delivery stored it first


@jobs.handles(job_kinds.PRIVACY_PREVIEW)
def privacy_preview_job(job, anonymized_set_id: int, round_id: int | None = None) -> str:
    """Job handler; ``round_id`` is in the arguments so a phase close finds the round's queued previews."""
    p = compute_preview(AnonymizedSet(pk=anonymized_set_id), job=job)
    if p is None:
        return say("no preview: the set is not valid or the anonymization phase is closing")
    return say("preview: s_I,min %(s_i)s, s_T,min %(s_t)s", s_i=score_text(p.summary["s_i_min"]),
               s_t=score_text(p.summary["s_t_min"]))


def score_text(value: float | None) -> str:
    """A preview minimum as the pages show it (``floatformat:4``): 4 decimals, "—" when no attack of its kind scored."""
    return "—" if value is None else f"{value:.4f}"
