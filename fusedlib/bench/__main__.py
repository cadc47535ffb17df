"""`python -m fusedlib.bench`: the experiments' command line (fusedlib.bench.cli)."""
import sys

from .cli import main

sys.exit(main())
