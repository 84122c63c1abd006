"""``python -m attnprof`` is the ``attnprof`` command."""

import sys

from attnprof.cli.main import main

sys.exit(main())
