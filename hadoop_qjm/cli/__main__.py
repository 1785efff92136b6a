"""``python -m hadoop_qjm.cli ARGS``: ``hdfs-py ARGS`` (what the daemon scripts and tests run)."""

import sys

from hadoop_qjm.cli import main

sys.exit(main())
