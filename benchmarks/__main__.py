"""``python -m benchmarks``: run the suite, print the table, write results/latest.json."""

import sys

from ._suite import main

sys.exit(main())
