"""`python -m fusedlib.bench`: the experiments' command line (fusedlib.bench.cli)."""
from .cli import main

main()
