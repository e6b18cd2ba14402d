"""``python -m tuner`` is the ``tuner`` command."""

import sys

from tuner.cli import main

sys.exit(main())
