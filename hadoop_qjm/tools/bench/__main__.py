"""``python -m hadoop_qjm.tools.bench SUBCOMMAND ...``: the same as ``hdfs-py bench``."""

import sys

from hadoop_qjm.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
