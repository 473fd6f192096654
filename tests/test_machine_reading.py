"""The machine's speed reading (bench/machine.py) that the test report's header and ``make bench`` print."""
from __future__ import annotations

import re

from bench import machine


def test_the_reading_gives_both_figures_in_milliseconds():
    line = machine.reading()
    match = re.fullmatch(r"machine: python (\d+) ms, fresh memory (\d+) ms \(bench\.machine\)", line)
    assert match, line
    assert int(match.group(1)) >= 1 and int(match.group(2)) >= 1  # 1e6 additions and 256 MB take time anywhere

