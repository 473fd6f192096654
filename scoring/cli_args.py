"""Arguments that several judge commands share (``python -m scoring`` and its plugged-in
commands in :mod:`scoring.algorithms.cli`), so that neither command module reaches into
the other's private parts."""
from __future__ import annotations

import argparse

from .grid import Grid


def add_grid_argument(parser: argparse.ArgumentParser) -> None:
    """``--grid INFO_REGION_CSV``: the contest grid a command reads region ids on."""
    parser.add_argument("--grid", metavar="INFO_REGION_CSV", default=None,
                        help="info_region.csv of the contest grid (default: the 2019 Tokyo 32x32 grid)")


def grid_from_args(args: argparse.Namespace) -> Grid:
    """The grid ``--grid`` names, else the 2019 Tokyo grid of rules §12."""
    return Grid.from_info_region(args.grid) if args.grid else Grid()
