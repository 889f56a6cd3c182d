"""``python -m scout.cli``: the ``scout`` command."""

import sys

from scout.cli import main

sys.exit(main())
