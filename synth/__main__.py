"""``python -m synth``: see :mod:`synth.cli`."""
import sys

from synth.cli import main

sys.exit(main())
