"""Command line of the judge: ``python -m scoring <command> ...``.

Commands (values on stdout at full precision, ``repr(float)``; problems on
stderr with exit status 1):

- ``utility TRUTH ANONYMIZED [--convention mean-distance|mean-loss]``
- ``reid PTABLE ETABLE``
- ``trace TRUTH ETRACES [--hospital-weight 10]``
- ``pseudonymize TRUTH ANONYMIZED --pub PUB --ptable PTABLE [--seed N]``
  (prints the SHA-256 commitment of the ID table)
- ``validate {traces,anotraces,pubtraces,ptable,etable,etraces} FILE [--truth TRUTH]``
- ``preview REFERENCE ORIGINAL ANONYMIZED [--seed N] [--attack-seeds NAME=N,...] [--time F] [--per-user OUT.csv]``:
  what the judge's attacks would give an anonymized set (:mod:`scoring.preview`),
  the same figures the team page shows after an upload

``--grid info_region.csv`` selects the grid wherever one is needed (default:
the 2019 Tokyo grid of rules §12; :mod:`scoring.cli_args`). Further commands
(``anonymize``, ``attack``, ``algorithms``) are added by :mod:`scoring.algorithms.cli`.
"""
from __future__ import annotations

import argparse
import secrets
import sys

from . import io as sio
from . import scores
from .algorithms import cli as algorithms_cli
from .algorithms.registry import judge_defaults
from .cli_args import add_grid_argument, grid_from_args
from .errors import ValidationError
from .grid import TimeAxis
from .preview import judge_mode_params, per_user_csv, per_user_rows, preview
from .pseudonymize import pseudonymize
from .vocabulary import AttackKind


class CommandError(Exception):
    """A usage problem found after parsing (e.g. a missing --truth)."""


def _read_truth(path, grid) -> sio.Traces:
    try:
        return sio.read_traces(path, grid)
    except ValidationError as exc:
        exc.source = exc.source or str(path)
        raise


def cmd_utility(args) -> int:
    grid = grid_from_args(args)
    truth = _read_truth(args.truth, grid)
    anon = sio.read_anotraces(args.anonymized, grid, truth)
    value = scores.utility(grid, truth, anon, convention=args.convention, lambda_u=args.lambda_u)
    print(repr(value))
    return 0


def cmd_reid(args) -> int:
    pse_ids, user_ids = sio.read_ptable(args.ptable)
    estimate = sio.read_etable(args.etable, len(pse_ids), len(user_ids))
    print(repr(scores.reidentification(user_ids, estimate)))
    return 0


def cmd_trace(args) -> int:
    grid = grid_from_args(args)
    truth = _read_truth(args.truth, grid)
    estimate = sio.read_etraces(args.etraces, grid, truth)
    print(repr(scores.trace_inference(grid, truth, estimate, lambda_t=args.lambda_t,
                                      hospital_weight=args.hospital_weight)))
    return 0


def cmd_pseudonymize(args) -> int:
    grid = grid_from_args(args)
    truth = _read_truth(args.truth, grid)
    anon = sio.read_anotraces(args.anonymized, grid, truth)
    result = pseudonymize(anon, seed=args.seed)
    sio.write_pubtraces(result.pubtraces, args.pub)
    sio.write_ptable(result.pse_ids, result.user_ids, args.ptable)
    print(result.commitment)
    print(f"nonce {result.nonce}  (keep secret until the results; then: (echo NONCE; cat PTABLE) | sha256sum)")
    return 0


def cmd_validate(args) -> int:
    grid = grid_from_args(args)
    kind = args.kind
    truth = _read_truth(args.truth, grid) if args.truth else None
    if kind in ("anotraces", "etraces") and truth is None:
        raise CommandError(f"validate {kind} needs --truth (the original traces it answers)")
    if kind == "traces":
        t = sio.read_traces(args.file, grid)
        summary = f"{t.m} users x {t.L} time ids ({t.time_ids[0]}..{t.time_ids[-1]})"
    elif kind == "anotraces":
        a = sio.read_anotraces(args.file, grid, truth)
        n_gen = a.sets.n_sets - grid.M - 1
        summary = f"{a.events.size} rows, {n_gen} distinct generalized sets"
    elif kind == "etraces":
        e = sio.read_etraces(args.file, grid, truth)
        summary = f"{e.regions.size} rows"
    elif kind == "pubtraces":
        p = sio.read_pubtraces(args.file, grid)
        summary = f"{p.m} pseudonyms ({p.user_ids[0]}..{p.user_ids[-1]}) x {p.L} time ids"
    elif kind == "ptable":
        pse, _ = sio.read_ptable(args.file)
        summary = f"{len(pse)} pseudonyms ({pse[0]}..{pse[-1]})"
    else:  # etable
        if args.users is not None:
            m = args.users
        elif truth is not None:
            m = truth.m
        else:
            raise CommandError("validate etable needs --truth or --users M (the number of users)")
        e = sio.read_etable(args.file, m, m)
        summary = f"{len(e)} pseudonyms"
    print(f"OK {kind}: {summary}")
    return 0


def cmd_preview(args) -> int:
    grid = grid_from_args(args)
    axis = TimeAxis.from_info_time(args.time) if args.time else None
    reference = _read_truth(args.reference, grid)
    truth = _read_truth(args.original, grid)
    anon = sio.read_anotraces(args.anonymized, grid, truth)
    seed = args.seed if args.seed is not None else secrets.randbits(63)
    attacks = args.attacks.split(",") if args.attacks else None
    names = attacks if attacks is not None else [a.name for a in judge_defaults()]
    result = preview(grid, reference, truth, anon, seed=seed, axis=axis, convention=args.convention,
                     s_req=args.s_req, hospital_weight=args.hospital_weight, lambda_u=args.lambda_u,
                     lambda_t=args.lambda_t, attacks=attacks, seeds=_attack_seeds(args.attack_seeds),
                     params=judge_mode_params(names, args.sample_2019))
    print(f"seed {seed}")
    print(f"s_U {result.s_u!r} ({'valid' if result.valid else 'INVALID: the judge would not attack it'}, "
          f"s_req {args.s_req})")
    for a in result.attacks:
        symbol = "s_I" if a.kind == AttackKind.REIDENTIFICATION else "s_T"
        print(f"{a.name:<14} {symbol} {a.score!r}")
    print(f"s_I,min {result.s_i_min!r}")
    print(f"s_T,min {result.s_t_min!r}")
    if args.per_user:
        with open(args.per_user, "wb") as fh:
            fh.write(per_user_csv(*per_user_rows(truth, result.attacks)))
    return 0


def _attack_seeds(text: str | None) -> dict[str, int] | None:
    """``--attack-seeds`` ("NAME=SEED,NAME=SEED") as {name: seed}; a malformed pair is a CommandError."""
    if not text:
        return None
    seeds = {}
    for pair in text.split(","):
        name, _, value = pair.partition("=")
        try:
            seeds[name.strip()] = int(value)
        except ValueError:
            raise CommandError(f"--attack-seeds: {pair!r} is not NAME=SEED with an integer seed") from None
    return seeds


#: The contest's scoring parameters as options, each declared once for the commands that take it.
SCORING_OPTIONS = {
    "--convention": dict(choices=scores.CONVENTIONS, default=scores.MEAN_DISTANCE,
                         help="utility of a generalized set (default: mean-distance, the paper's)"),
    "--s-req": dict(type=float, default=0.7, help="utility a valid set needs (default 0.7)"),
    "--hospital-weight": dict(type=float, default=10.0, help="weight of hospital events (default 10)"),
    "--lambda-u": dict(type=float, default=2.0, help="lambda_U in km (default 2)"),
    "--lambda-t": dict(type=float, default=2.0, help="lambda_T in km (default 2)"),
}


def add_scoring_options(p, *flags: str) -> None:
    """Add the :data:`SCORING_OPTIONS` named by ``flags`` to ``p``, in that order."""
    for flag in flags:
        p.add_argument(flag, **SCORING_OPTIONS[flag])


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m scoring`` argument parser (with any plugged-in subcommands)."""
    parser = argparse.ArgumentParser(prog="python -m scoring",
                                     description="TraceCup judge: validate contest files and compute scores.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("utility", help="utility score s_U of anonymized traces")
    p.add_argument("truth", metavar="TRUTH", help="original traces (user_id,time_id,reg_id)")
    p.add_argument("anonymized", metavar="ANONYMIZED", help="anonymized traces (reg_id)")
    add_scoring_options(p, "--convention", "--lambda-u")
    add_grid_argument(p)
    p.set_defaults(func=cmd_utility)

    p = sub.add_parser("reid", help="re-identification privacy s_I of an etable")
    p.add_argument("ptable", metavar="PTABLE", help="the secret ID table (pse_id,user_id)")
    p.add_argument("etable", metavar="ETABLE", help="estimated ID table (user_id)")
    p.set_defaults(func=cmd_reid)

    p = sub.add_parser("trace", help="trace-inference privacy s_T of an etraces file")
    p.add_argument("truth", metavar="TRUTH", help="original traces (user_id,time_id,reg_id)")
    p.add_argument("etraces", metavar="ETRACES", help="estimated traces (reg_id)")
    add_scoring_options(p, "--hospital-weight", "--lambda-t")
    add_grid_argument(p)
    p.set_defaults(func=cmd_trace)

    p = sub.add_parser("pseudonymize", help="pseudonymize anonymized traces; prints the commitment")
    p.add_argument("truth", metavar="TRUTH", help="original traces the anonymized file answers")
    p.add_argument("anonymized", metavar="ANONYMIZED", help="anonymized traces (reg_id)")
    p.add_argument("--pub", required=True, help="pubtraces file to write (.gz compresses)")
    p.add_argument("--ptable", required=True, help="ID table file to write (keep it secret)")
    p.add_argument("--seed", type=int, default=None,
                   help="reproducible permutation (tests only; default: cryptographically secure)")
    add_grid_argument(p)
    p.set_defaults(func=cmd_pseudonymize)

    p = sub.add_parser("validate", help="check a contest file against rules §5")
    p.add_argument("kind", choices=("traces", "anotraces", "pubtraces", "ptable", "etable", "etraces"))
    p.add_argument("file", metavar="FILE")
    p.add_argument("--truth", default=None, help="original traces (needed for anotraces and etraces)")
    p.add_argument("--users", type=int, default=None, help="number of users m (etable, without --truth)")
    add_grid_argument(p)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("preview", help="what the judge's attacks would give an anonymized set")
    p.add_argument("reference", metavar="REFERENCE", help="your reference traces R (user_id,time_id,reg_id)")
    p.add_argument("original", metavar="ORIGINAL", help="your original traces O (user_id,time_id,reg_id)")
    p.add_argument("anonymized", metavar="ANONYMIZED", help="your anonymized traces (reg_id)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the pseudonymization and the attacks (default: fresh, printed)")
    p.add_argument("--attack-seeds", metavar="NAME=SEED,...", default=None,
                   help="each attack's own seed (the platform's card gives the judge's), instead of one "
                        "derived from --seed")
    p.add_argument("--time", metavar="INFO_TIME_CSV", default=None,
                   help="info_time.csv of the round: the clock of the 8:00-8:59 attacks (default: 2019's)")
    p.add_argument("--per-user", metavar="OUT_CSV", default=None,
                   help="write the per-user risk table (who is re-identified, by which attack)")
    add_scoring_options(p, "--convention", "--s-req", "--hospital-weight", "--lambda-u", "--lambda-t")
    p.add_argument("--attacks", metavar="NAMES", default=None,
                   help="comma-separated judge attacks (default: I1-I3 and T1-T3)")
    p.add_argument("--sample-2019", action="store_true",
                   help="the judge's 2019 sampling mode (the official programs' draws) instead of exact")
    add_grid_argument(p)
    p.set_defaults(func=cmd_preview)

    algorithms_cli.register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValidationError as exc:
        print(str(exc), file=sys.stderr)
    except (CommandError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
