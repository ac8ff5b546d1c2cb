"""``python -m loupe.cli``: the ``loupe`` command (what the console script runs)."""

import sys

from . import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
