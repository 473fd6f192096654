"""Command-line access to the registered algorithms, plugged into ``python -m scoring``.

- ``anonymize NAME TRUTH OUT [--param key=value ...] [--seed N] [--grid F]``
  runs an anonymizer on original traces and writes an anotraces file.
- ``attack NAME REFERENCE PUBTRACES OUT [--param key=value ...] [--seed N] [--grid F] [--time F]``
  runs an attack with the reference traces against a pubtraces file and writes
  an etable (re-identification attacks) or an etraces file (trace inference);
  ``--time info_time.csv`` sets the slot-of-day parameters from the contest's
  time axis (:meth:`~scoring.algorithms.registry.Algorithm.axis_params`).
- ``algorithms [--kind KIND] [--json]`` lists the algorithms, kinds, whether
  the judge runs them by default, and their parameters with defaults and docs.

A ``.gz`` output name writes compressed (the writers of :mod:`scoring.io`
decide). ``--seed`` makes a run reproducible; without it the run draws fresh
randomness.
"""
from __future__ import annotations

import json

from .. import io as sio
from ..cli_args import add_grid_argument, grid_from_args
from ..grid import TimeAxis
from ..vocabulary import AttackKind
from .registry import KINDS, all_algorithms, get


def parse_params(items) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; values stay text for :meth:`Param.parse`."""
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param expects key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def _algorithm(name: str, kinds: tuple[str, ...]):
    try:
        algorithm = get(name)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None
    if algorithm.kind not in kinds:
        names = ", ".join(a.name for a in all_algorithms() if a.kind in kinds)
        raise ValueError(f"{name} is a {algorithm.kind} algorithm, expected one of: {names}")
    return algorithm


def cmd_anonymize(args) -> int:
    algorithm = _algorithm(args.name, ("anonymizer",))
    params = algorithm.resolve(parse_params(args.param))  # bad parameters fail before any file is read
    grid = grid_from_args(args)
    truth = sio.read_traces(args.truth, grid)
    anon = algorithm.run(grid, truth, seed=args.seed, **params)
    sio.write_anotraces(anon, args.out)
    return 0


def cmd_attack(args) -> int:
    algorithm = _algorithm(args.name, (AttackKind.REIDENTIFICATION, AttackKind.TRACE_INFERENCE))
    axis = algorithm.axis_params(TimeAxis.from_info_time(args.time)) if args.time else {}
    params = algorithm.resolve({**axis, **parse_params(args.param)})  # an explicit --param wins
    grid = grid_from_args(args)
    reference = sio.read_traces(args.reference, grid)
    pub = sio.read_pubtraces(args.pubtraces, grid)
    result = algorithm.run(grid, reference, pub, seed=args.seed, **params)
    if algorithm.kind == AttackKind.REIDENTIFICATION:
        sio.write_etable(result, args.out)
    else:
        sio.write_etraces(result, args.out)
    return 0


def describe(algorithm) -> dict:
    """A JSON-ready description: name, kind, judge_default, doc, parameters."""
    return {
        "name": algorithm.name,
        "kind": algorithm.kind,
        "judge_default": algorithm.judge_default,
        "doc": algorithm.doc,
        "params": [{"name": p.name, "type": p.type.__name__, "default": p.default, "doc": p.doc}
                   for p in algorithm.params],
    }


def cmd_algorithms(args) -> int:
    algorithms = all_algorithms(args.kind)
    if args.json:
        print(json.dumps([describe(a) for a in algorithms], indent=2))
        return 0
    for a in algorithms:
        flag = "  [judge default]" if a.judge_default else ""
        print(f"{a.name}  ({a.kind}){flag}")
        summary = " ".join(a.doc.split("\n\n")[0].split()) if a.doc else ""
        if summary:
            print(f"    {summary}")
        for p in a.params:
            setting = f"{p.name}={p.default!r}"
            print(f"    --param {setting:<22} ({p.type.__name__}) {p.doc}")
        print()
    return 0


def _add_common(p) -> None:
    p.add_argument("--param", action="append", metavar="KEY=VALUE", default=[],
                   help="set a parameter (repeatable); see `python -m scoring algorithms`")
    p.add_argument("--seed", type=int, default=None, help="random seed (reproducible run)")
    add_grid_argument(p)


def register(subparsers) -> None:
    """Add ``anonymize``, ``attack`` and ``algorithms`` to the ``python -m scoring`` parser."""
    p = subparsers.add_parser("anonymize", help="run a sample anonymizer; writes an anotraces file")
    p.add_argument("name", metavar="NAME", help="anonymizer name, e.g. A2-MRLH")
    p.add_argument("truth", metavar="TRUTH", help="original traces (user_id,time_id,reg_id)")
    p.add_argument("out", metavar="OUT", help="anotraces file to write")
    _add_common(p)
    p.set_defaults(func=cmd_anonymize)

    p = subparsers.add_parser("attack", help="run an attack; writes an etable or an etraces file")
    p.add_argument("name", metavar="NAME", help="attack name, e.g. I2-VisitProb or T2-VisitProb")
    p.add_argument("reference", metavar="REFERENCE", help="reference traces (user_id,time_id,reg_id)")
    p.add_argument("pubtraces", metavar="PUBTRACES", help="pubtraces (pse_id,time_id,reg_id)")
    p.add_argument("out", metavar="OUT", help="etable (re-identification) or etraces (trace inference) to write")
    _add_common(p)
    p.add_argument("--time", metavar="INFO_TIME_CSV", default=None,
                   help="info_time.csv of the contest: sets slots_per_day and home_slots "
                        "(default: the 2019 axis, 20 slots from 8:00)")
    p.set_defaults(func=cmd_attack)

    p = subparsers.add_parser("algorithms", help="list the algorithms and their parameters")
    p.add_argument("--kind", choices=KINDS, default=None, help="only this kind")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_algorithms)
