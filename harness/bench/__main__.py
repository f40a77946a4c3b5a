import sys

from harness.bench.command import main

sys.exit(main())
