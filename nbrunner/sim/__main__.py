"""``python -m nbrunner.sim``: see ``nbrunner.sim.cli``."""

import sys

from .cli import main

sys.exit(main())
