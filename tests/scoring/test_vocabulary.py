"""The contest's words are defined once (scoring.vocabulary) and the other layers follow them."""
from __future__ import annotations

import json

import numpy as np
import pytest

from scoring.scores import attack_score, reidentification
from scoring.seeds import derived_seed
from scoring.vocabulary import AttackKind, Challenge, ScoreKind


def test_members_equal_their_stored_values_and_serialize_plainly():
    assert Challenge.IDP == 1 and Challenge.TRP == 2
    assert AttackKind.REIDENTIFICATION == "reidentification" and ScoreKind.UTILITY == "utility"
    assert json.dumps({"c": Challenge.TRP, "k": AttackKind.TRACE_INFERENCE}) == '{"c": 2, "k": "trace_inference"}'
    assert [AttackKind.of_file(f) for f in ("etable", "etraces")] == list(AttackKind)
    assert [c.attack_kind.symbol for c in Challenge] == ["s_I", "s_T"]
    with pytest.raises(ValueError, match="etable or etraces"):
        AttackKind.of_file("etrace")


def test_the_platform_models_take_their_choices_and_defaults_from_scoring():
    from contest.models import CHALLENGES, Contest, Score
    from scoring.algorithms.registry import judge_defaults

    assert CHALLENGES == ((1, "re-identification (IDP)"), (2, "trace inference (TRP)"))
    assert dict(Score.METRICS) == {"utility": "s_U", "reidentification": "s_I", "trace_inference": "s_T"}
    assert Contest().judge_attacks == [a.name for a in judge_defaults()] == [
        "I1-rand", "I2-VisitProb", "I3-HomeProb", "T1-rand", "T2-VisitProb", "T3-HomeProb"]


def test_attack_score_dispatches_by_kind_and_names_what_is_missing():
    true_users = np.array([3, 1, 2])
    estimate = np.array([3, 2, 2])
    assert attack_score("reidentification", None, estimate, true_users=true_users) == reidentification(
        true_users, estimate) == pytest.approx(1 / 3)  # two of three right
    with pytest.raises(ValueError, match="original traces"):
        attack_score(AttackKind.TRACE_INFERENCE, None, estimate)
    with pytest.raises(ValueError, match="not an attack kind"):
        attack_score("anonymizer", None, estimate, true_users=true_users)


def test_derived_seed_is_the_historic_formula():
    # The judge's stored seeds were made with this text; a change would alter re-runs.
    import hashlib
    text = "12345:1:team001-IDP:I2-VisitProb"
    assert derived_seed(12345, 1, "team001-IDP", "I2-VisitProb") == int.from_bytes(
        hashlib.sha256(text.encode()).digest()[:8], "big") >> 1
