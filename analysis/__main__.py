"""python -m analysis RUN_DIR [--master URL] [--remote sc://...]   |   python -m analysis compare RUN..."""
import sys

from analysis.cli import main

sys.exit(main())
