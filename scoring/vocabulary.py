"""The contest's words, defined once (rules §5-9): challenges, kinds of algorithm, attack and score.

Everything else -- the results function, the algorithm registry, the platform's
model choices and pages -- takes these names from here. The enums are ``int`` /
``str`` subclasses, so a member equals its stored value (``Challenge.IDP == 1``,
``AttackKind.REIDENTIFICATION == "reidentification"``) and JSON, database rows
and old snapshots keep their plain values.
"""
from __future__ import annotations

from enum import IntEnum, StrEnum


class Challenge(IntEnum):
    """The two challenges of a round; each anonymized set is made for one of them."""

    IDP = 1  # re-identification: the set is judged by s_I,min
    TRP = 2  # trace inference: the set is judged by s_T,min

    @property
    def label(self) -> str:
        return "re-identification (IDP)" if self is Challenge.IDP else "trace inference (TRP)"

    @property
    def attack_kind(self) -> AttackKind:
        """The attack kind whose minimum decides this challenge's awards."""
        return AttackKind.REIDENTIFICATION if self is Challenge.IDP else AttackKind.TRACE_INFERENCE


class AttackKind(StrEnum):
    """What an attack estimates: the ID table (score s_I) or the original traces (score s_T)."""

    REIDENTIFICATION = "reidentification"
    TRACE_INFERENCE = "trace_inference"

    @property
    def symbol(self) -> str:
        return "s_I" if self is AttackKind.REIDENTIFICATION else "s_T"

    @property
    def file_kind(self) -> str:
        """The file a team uploads for this kind: ``etable`` or ``etraces``."""
        return "etable" if self is AttackKind.REIDENTIFICATION else "etraces"

    @classmethod
    def of_file(cls, file_kind: str) -> AttackKind:
        """The kind an ``etable`` / ``etraces`` upload is scored as."""
        for kind in cls:
            if kind.file_kind == file_kind:
                return kind
        raise ValueError(f"unknown attack file kind {file_kind!r}; expected etable or etraces")


class AlgorithmKind(StrEnum):
    """Kinds of registered algorithm (``scoring.algorithms.registry``)."""

    ANONYMIZER = "anonymizer"
    REIDENTIFICATION = "reidentification"
    TRACE_INFERENCE = "trace_inference"


class ScoreKind(StrEnum):
    """The three scores (rules §7): utility of a set, and the two privacy scores of an attack on it."""

    UTILITY = "utility"
    REIDENTIFICATION = "reidentification"
    TRACE_INFERENCE = "trace_inference"

    @property
    def symbol(self) -> str:
        return {"utility": "s_U", "reidentification": "s_I", "trace_inference": "s_T"}[self.value]


IDP, TRP = Challenge.IDP, Challenge.TRP
CHALLENGES = tuple(Challenge)
REIDENTIFICATION, TRACE_INFERENCE = AttackKind.REIDENTIFICATION, AttackKind.TRACE_INFERENCE
ATTACK_KINDS = tuple(AttackKind)

