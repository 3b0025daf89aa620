"""_common.py: the repository root for the lab studies' tests (lab/tests/test_*.py).

Run from the repository root: /usr/bin/python3 -m unittest discover -s lab/tests
"""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNERS = os.path.join(REPO, "runners")
if RUNNERS not in sys.path:
    sys.path.insert(0, RUNNERS)
