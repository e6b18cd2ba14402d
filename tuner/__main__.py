"""``python -m tuner`` is the ``tuner`` command."""

import sys

from tuner.entry import main

sys.exit(main())
