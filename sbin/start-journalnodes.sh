#!/usr/bin/env bash
# Start a JournalNode for each local address named in dfs.namenode.shared.edits.dir.
#
#   sbin/start-journalnodes.sh [--config DIR]
#
# One local address: the JournalNode runs with the configuration as it is (the usual
# one-JournalNode-per-host deployment; run this script on every JournalNode host).
# Several local addresses (a one-host test cluster, e.g. qjournal://127.0.0.1:8485;127.0.0.1:8486;...):
# the JournalNode for port P listens on that RPC port, picks a free HTTP port (clients learn it
# through getJournalState) and keeps its journals in ${dfs.journalnode.edits.dir}/jn-P.
set -u
bin=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$bin/journalnodes-py.sh" start "$@"
