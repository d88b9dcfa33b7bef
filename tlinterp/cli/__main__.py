"""`python -m tlinterp.cli` is `tlrun`."""

import sys

from tlinterp.cli.tlrun import main

sys.exit(main())
