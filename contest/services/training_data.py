"""The organizer's own training data for a round: training traces, or a model trained offline.

The 2019 contest synthesized its data from real people-flow traces; by
default the platform trains on its built-in city. An organizer may give a
round, before its data is generated (console or API):

- **training traces** (``user_id,time_id,reg_id``, rules §5, read by the same
  reader as every upload: :func:`scoring.io.read_traces` on the contest's
  grid, time ids on the contest's slots: slot ``(t - 1) % S`` of the
  contest's day). The generation job trains the contest's method on them with
  the contest's training parameters (:func:`train_round_model`); or
- **a model** trained offline with ``python -m synth train`` (any method's
  ``.npz``; it must be the contest's method on the contest's grid). It
  becomes the round's model directly.

Secrecy: the file is readable by the contest's organizers only
(:func:`contest.permissions.can_read_round_file`, ``"training"``); it is
never in a bundle, a team's export, a page a team or the public sees, or the
manifest. The organizers see which data trained the round (name, size,
SHA-256: :func:`training_summary`) and, for a DP method, its ledger (the
round's synthesizer summary).
"""
from __future__ import annotations

from django.db import transaction

from contest.models import AuditLog, Dataset, Round
from contest.services import audit, storage
from contest.services.uploads import RuleViolation
from scoring.errors import ValidationError
from scoring.grid import Grid, TimeAxis
from scoring.io import read_traces
from synth import registry
from synth.methods import SCHEMAS, load_model, method_of, train_model, training_seed

KINDS = (Round.TRAINING_TRACES, Round.TRAINING_MODEL)
#: Training parameters of the built-in city that do not apply to the organizer's traces.
CITY_ONLY = {"city_seed", "train_users", "train_days", "lead_minutes", "tail_minutes"}


def _check_traces(content: bytes, grid: Grid, axis: TimeAxis, method: str, params: dict):
    try:
        traces = read_traces(content, grid)
    except ValidationError as exc:
        raise RuleViolation(f"training traces: {exc}", status=400) from None
    if traces.m < 2:
        raise RuleViolation(f"training traces: {traces.m} user(s); training needs at least 2", status=400)
    least_users = registry.get(method).least_users  # the method says what it needs beyond two users
    if least_users is not None:
        need, why = least_users(params)
        if traces.m < need:
            raise RuleViolation(f"training traces: {traces.m} users, fewer than {why}", status=400)
    return traces


def slot_reading(traces, axis: TimeAxis) -> dict:
    """How the training traces' time ids were read on the contest's day, for the organizer to see: each
    user's ``time_ids`` (L of them) fall on slot ``(t - 1) % S`` of the contest's ``S`` slots, so L ids are
    ``L // S`` whole days and ``L % S`` slots more (35 ids on a 20-slot day: 1 day and 15 slots)."""
    n_ids, per_day = int(len(traces.time_ids)), int(axis.slots_per_day)
    return {"users": int(traces.m), "time_ids": n_ids, "slots_per_day": per_day, "days": n_ids // per_day,
            "extra_slots": n_ids % per_day}


def _check_model(content: bytes, grid: Grid, method: str):
    try:
        model = load_model(content)
    except (ValueError, OSError, KeyError) as exc:
        raise RuleViolation(f"model: not a model file of python -m synth train ({exc})", status=400) from None
    if method_of(model) != method:
        raise RuleViolation(f"model: a {method_of(model)} model, but the contest's synthesizer is {method}",
                            status=400)
    if (model.nx, model.ny) != (grid.nx, grid.ny):
        raise RuleViolation(f"model: trained on a {model.nx} x {model.ny} grid, the contest's is "
                            f"{grid.nx} x {grid.ny}", status=400)
    return model


def give_training_data(round_: Round, *, user, content: bytes, name: str, kind: str) -> Round:
    """Store the organizer's training traces or model for ``round_`` (before its data is generated).

    Raises :class:`RuleViolation` (a clear message; nothing is stored or changed) when the round's
    data exists, the contest's synthesizer does not train (``city``), or the file is not valid.
    """
    contest = round_.contest
    method = contest.synthesizer
    if kind not in KINDS:
        raise RuleViolation(f"kind {kind!r}: expected one of {', '.join(KINDS)}", status=400)
    if method == "city":
        raise RuleViolation("the contest's synthesizer is the built-in city (no training): choose ppmtf, sglt "
                            "or coloc to train on your own data", status=400)
    grid = contest.grid()
    reading = None
    if kind == Round.TRAINING_TRACES:
        traces = _check_traces(content, grid, round_.time_axis(), method, contest.synthesizer_params or {})
        reading = slot_reading(traces, round_.time_axis())
    else:
        _check_model(content, grid, method)
    with transaction.atomic():
        locked = Round.objects.select_for_update().get(pk=round_.pk)
        if locked.generated_at or Dataset.objects.filter(round=locked).exists():
            raise RuleViolation(f"{round_.name}: its data is generated already; training data can only be given "
                                "before generation")
        stored = storage.store_bytes(content, name, user=user,
                                     content_type="text/csv" if kind == Round.TRAINING_TRACES
                                     else "application/octet-stream")
        fields = dict(training_data=stored, training_kind=kind,
                      model_file=stored if kind == Round.TRAINING_MODEL else None)
        Round.objects.filter(pk=round_.pk).update(**fields)
        for k, v in fields.items():
            setattr(round_, k, v)
        audit.record("give_training_data", contest=contest, actor=user, obj=round_, kind=kind, name=name,
                     sha256=stored.sha256, size=stored.size, reading=reading)
    return round_


def train_round_model(round_: Round, method: str, grid: Grid, axis: TimeAxis, *, seed: int, params: dict,
                      progress=None):
    """The round's model trained on the organizer's training traces, or None (train on the built-in city).

    ``params`` are the contest's ``synthesizer_params``; the city's own ones (``train_users``, ...) do not
    apply. The traces are on the contest's day: S slots from the contest's first slot.
    """
    if round_.training_kind != Round.TRAINING_TRACES or not round_.training_data_id:
        return None
    traces = read_traces(storage.read_bytes(round_.training_data), grid)
    p = {k: v for k, v in params.items() if k in SCHEMAS[method]["training"] and k not in CITY_ONLY}
    if p.get("hierarchy") == "categories":
        raise ValueError("hierarchy 'categories' needs the built-in city's points of interest; use 'blocks' with "
                         "your own training traces")
    return train_model(method, traces, grid, slots_per_day=axis.slots_per_day, slot_start_minute=axis.start_minute,
                       slot_minutes=axis.slot_minutes, seed=training_seed(method, seed), progress=progress, **p)


def training_summary(round_: Round) -> dict | None:
    """What trained the round (organizers only): kind, file name, size in bytes, SHA-256 and, for traces,
    how their time ids were read (:func:`slot_reading`, kept in the audit entry of the file); None = the city."""
    if not round_.training_data_id:
        return None
    f = round_.training_data
    given = (AuditLog.objects.filter(action="give_training_data", object_type="Round", object_id=str(round_.pk))
             .order_by("-id").first())
    reading = (given.details or {}).get("reading") if given and given.details.get("sha256") == f.sha256 else None
    return dict(kind=round_.training_kind, name=f.name, size=f.size, sha256=f.sha256, reading=reading)
