"""``python -m quicklaunch`` is the ``quicklaunch`` command."""
import sys

from .cli import main

sys.exit(main())
