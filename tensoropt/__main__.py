"""``python -m tensoropt`` runs the ``tensoropt`` command."""

import sys

from tensoropt.cli import main

sys.exit(main())
