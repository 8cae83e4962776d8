"""`python -m specializer.cli`, as the `specialize` script runs it."""

import sys

from specializer.cli import main

sys.exit(main())
