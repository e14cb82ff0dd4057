import sys

from memtune.cli.main import main

sys.exit(main())
