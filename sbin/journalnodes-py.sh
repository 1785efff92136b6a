#!/usr/bin/env bash
# Shared by start-journalnodes.sh and stop-journalnodes.sh: (start|stop|status) [--config DIR]
set -u
sbin=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case "${1:-}" in
  start|stop|status) action=$1; shift ;;
  *) echo "Usage: journalnodes-py.sh (start|stop|status) [--config DIR]" >&2; exit 2 ;;
esac
usage="Usage: $action-journalnodes.sh [--config DIR]"
if [ "${1:-}" = "--config" ]; then
  [ $# -ge 2 ] && [ -n "$2" ] || { echo "$usage" >&2; exit 2; }
  export HADOOP_CONF_DIR=$2
  shift 2
fi
[ $# -eq 0 ] || { echo "$action-journalnodes.sh: unknown argument $1; $usage" >&2; exit 2; }
# shellcheck source=hadoop-config-py.sh
. "$sbin/hadoop-config-py.sh"
run_py -m hadoop_qjm.tools.daemon_control journalnodes "$action"
