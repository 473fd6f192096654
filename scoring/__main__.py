"""``python -m scoring``: the judge's command line (see :mod:`scoring.cli`)."""
import sys

from .cli import main

sys.exit(main())
