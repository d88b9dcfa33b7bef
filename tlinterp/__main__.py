"""`python -m tlinterp` is `tlrun`."""

import sys

from .cli import main

sys.exit(main())
