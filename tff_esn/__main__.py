"""``python -m tff_esn`` — same as the ``tff-esn`` console script."""

import sys

from tff_esn.cli import main

sys.exit(main())
