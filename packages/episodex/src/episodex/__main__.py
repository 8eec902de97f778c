"""`python -m episodex`: the command line."""

import sys

from episodex.cli import main

sys.exit(main())
