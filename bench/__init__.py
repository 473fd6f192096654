"""Benchmarks of TraceCup: developer tools that measure the judge, the synthesizer and the platform.

Not part of the platform at run time, and not in the judge's wheel (``pyproject.toml`` packages
``scoring`` alone): each module is a command, ``make bench``, ``make bench-full`` and ``make bench-surge`` run them.

- ``python -m bench.judge``: reading, validating and scoring files of the 2019 size (``scoring``);
- ``python -m bench.algorithms``: every registered anonymizer and attack (``scoring.algorithms``);
- ``python -m bench.synthesizer``: training and generation time and memory (``synth``);
- ``python -m bench.hostile``: hostile uploads and requests against the production stack;
- ``python -m bench.full``: a 2019-size round through the real pipeline, then the pages under load
  (``make bench-full``; its wrk load script is ``bench/wrk.lua``);
- ``python -m bench.surge``: the last minutes of a 2019-size round, every team uploading before the
  deadline (``make bench-surge``); ``bench.common`` holds what it shares with ``bench.full``.

A benchmark may import any package of the project; nothing of the project imports a benchmark.
"""
