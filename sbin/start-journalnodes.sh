#!/usr/bin/env bash
# Start the JournalNodes of dfs.namenode.shared.edits.dir that are on this host, in the
# background (see hadoop-daemon-py.sh for the environment: HADOOP_LOG_DIR, HADOOP_PID_DIR, ...).
#
#   start-journalnodes.sh [--config DIR]
#
# One of them here (the usual deployment: run this on every JournalNode host): it runs with the
# configuration as it is. Several here (one host standing in for several, e.g.
# qjournal://127.0.0.1:8485;127.0.0.2:8485;127.0.0.3:8485): if dfs.journalnode.rpc-address
# names one of them, only that one starts, as configured (one configuration directory per
# JournalNode); otherwise all start, each on its own address with the configured HTTP port,
# its journals in ${dfs.journalnode.edits.dir}/<host>-<port>, named $USER-<host>-<port>, and
# the script says so in one line.
set -u
sbin=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$sbin/journalnodes-py.sh" start "$@"
