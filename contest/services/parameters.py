"""The one check of a contest's parameters (rules §12), shared by the contest file, the API and the console.

:func:`problems` takes the parameters as given (a contest file's values, or a
console form's cleaned data) and returns every problem as ``(field, value,
expected)``, so each caller says it in its own form (a ``SetupError`` naming
``contest.parameters.<field>``, a form error on the field). Bounds are those a
contest can run with on the platform; the synthesizer's own parameters are
checked against its schema (``synth.methods.check_synthesizer_params``).
"""
from __future__ import annotations

import zoneinfo
from datetime import date, datetime

from contest.models import Contest
from scoring.algorithms.registry import all_algorithms
from synth.methods import CONTEST_SYNTHESIZERS, check_synthesizer_params, choice_check, int_check, number_check

MB = 1 << 20


def _is_bool(v) -> bool:
    return isinstance(v, bool)


def _time_zone(v) -> bool:
    try:
        zoneinfo.ZoneInfo(str(v))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return bool(v)


def _int_list(v) -> bool:
    return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


def _judge_attacks(v) -> bool:
    known = {a.name for a in all_algorithms() if a.kind in ("reidentification", "trace_inference")}
    return isinstance(v, list) and all(isinstance(x, str) and x in known for x in v)


def _mapping(v) -> bool:
    return isinstance(v, dict)


def _time(v) -> bool:
    return v is None or isinstance(v, (str, datetime, date))


def _choices(field: str):
    return choice_check(*(value for value, _label in Contest._meta.get_field(field).choices))


#: Per parameter: (check, what is expected). The names are the model's fields (rules §12 in its words).
PARAMETERS = {
    "grid_nx": int_check(1, 256), "grid_ny": int_check(1, 256),
    "grid_min_x": number_check(-180, 180), "grid_max_x": number_check(-180, 180),
    "grid_min_y": number_check(-90, 90), "grid_max_y": number_check(-90, 90),
    "km_lat": number_check(0, 1000, open_lo=True), "km_lon": number_check(0, 1000, open_lo=True),
    "hospitals": (_int_list, "a list of region ids (integers)"),
    "hospital_weight": number_check(0, 1000),
    "users_per_set": int_check(1, 100_000),
    "slots_per_day": int_check(1, 1440), "day_start_minute": int_check(0, 1439), "slot_minutes": int_check(1, 1440),
    "lambda_u": number_check(0, 1000, open_lo=True), "lambda_t": number_check(0, 1000, open_lo=True),
    "s_req": number_check(0, 1),
    "utility_convention": _choices("utility_convention"),
    "anonymized_upload_limit": int_check(1, 1000),
    "etable_limit": int_check(1, 100), "etraces_limit": int_check(1, 100),
    "upload_size_limit": int_check(1024, 200 * MB),
    "judge_attacks_enabled": (_is_bool, "true or false"),
    "judge_attacks": (_judge_attacks, "a list of the registry's attack names (python -m scoring algorithms)"),
    "judge_attack_mode": _choices("judge_attack_mode"),
    "time_zone": (_time_zone, "an IANA time zone such as Asia/Tokyo"),
    "award_variant": _choices("award_variant"),
    "tie_break": _choices("tie_break"),
    "synthesizer": choice_check(*CONTEST_SYNTHESIZERS),
    "synthesizer_params": (_mapping, "a mapping of the synthesizer's parameters"),
    "seed": int_check(0, 2**63 - 1),
    "freeze_at": (_time, "a date and time"),
}


def _value(params: dict, field: str):
    return params[field] if field in params else Contest._meta.get_field(field).get_default()


def problems(params: dict) -> list[tuple[str, object, str]]:
    """Every problem of ``params`` (parameter name -> value; missing ones take the model's defaults).

    Unknown names are problems (a misspelt parameter would otherwise be ignored).
    Then each value against :data:`PARAMETERS`, then the rules between them: a
    grid's west edge before its east edge (south before north), hospitals inside
    the grid, the day's slots within 24 hours, the synthesizer's parameters
    against its schema.
    """
    out = []
    for field, value in params.items():
        if field not in PARAMETERS:
            out.append((field, value, f"a known contest parameter ({', '.join(sorted(PARAMETERS))})"))
        elif not PARAMETERS[field][0](value):
            out.append((field, value, PARAMETERS[field][1]))
    bad = {f for f, _v, _e in out}
    v = {f: _value(params, f) for f in PARAMETERS}
    for lo, hi in (("grid_min_x", "grid_max_x"), ("grid_min_y", "grid_max_y")):
        if not {lo, hi} & bad and v[lo] >= v[hi]:
            out.append((hi, v[hi], f"more than {lo} ({v[lo]})"))
    if not {"hospitals", "grid_nx", "grid_ny"} & bad:
        regions = v["grid_nx"] * v["grid_ny"]
        outside = [h for h in v["hospitals"] if not 1 <= h <= regions]
        if outside:
            out.append(("hospitals", outside[:5], f"region ids in [1, {regions}] (the grid's regions)"))
    if not {"slots_per_day", "slot_minutes", "day_start_minute"} & bad:
        end = v["day_start_minute"] + v["slots_per_day"] * v["slot_minutes"]
        if end > 24 * 60:
            out.append(("slots_per_day", v["slots_per_day"],
                        f"slots that end within the day (day_start_minute + slots_per_day x slot_minutes = {end} "
                        "> 1440)"))
    if not {"synthesizer", "synthesizer_params"} & bad:
        for key, value, expected in check_synthesizer_params(v["synthesizer_params"] or {}, v["synthesizer"]):
            out.append(("synthesizer" if key == "synthesizer" else f"synthesizer_params.{key}", value, expected))
    return out


def describe(problem: tuple[str, object, str], prefix: str = "") -> str:
    """One problem in words: ``<prefix><field>: expected <what>, got <value>``."""
    field, value, expected = problem
    return f"{prefix}{field}: expected {expected}, got {value!r}"
