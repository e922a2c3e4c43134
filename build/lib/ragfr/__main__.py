import sys

from ragfr.cli import main

sys.exit(main())
