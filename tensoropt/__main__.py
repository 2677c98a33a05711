"""``python -m tensoropt`` runs the ``tensoropt`` command."""

import sys

from tensoropt.cli.main import main

sys.exit(main())
