#!/usr/bin/env bash
# Stop every daemon of the cluster the configuration describes, as Hadoop's stop-dfs.sh:
# the JournalNodes of dfs.namenode.shared.edits.dir, the NameNodes of the nameservice and,
# with dfs.ha.automatic-failover.enabled, their ZKFCs (stopped in the reverse order, by pid file).
# This host's daemons directly; another host's over ssh, running the same sbin script with the
# same configuration directory there. With dfs.ha.namenode.id set, of the NameNodes on this
# machine only that one (and its ZKFC): one configuration directory per host.
#
#   stop-dfs-py.sh [--config DIR]
#
# Environment: that of hadoop-daemon-py.sh, and HADOOP_SSH_OPTS (-o BatchMode=yes
# -o ConnectTimeout=10), HADOOP_SSH_LOCAL=true to reach this host's daemons over ssh too.
set -u
sbin=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage="Usage: stop-dfs-py.sh [--config DIR]"
if [ "${1:-}" = "--config" ]; then
  [ $# -ge 2 ] && [ -n "$2" ] || { echo "$usage" >&2; exit 2; }
  export HADOOP_CONF_DIR=$2
  shift 2
fi
[ $# -eq 0 ] || { echo "stop-dfs-py.sh: unknown argument $1; $usage" >&2; exit 2; }
# shellcheck source=hadoop-config-py.sh
. "$sbin/hadoop-config-py.sh"
export HADOOP_QJM_SBIN=$sbin
run_py -m hadoop_qjm.tools.start_dfs stop
