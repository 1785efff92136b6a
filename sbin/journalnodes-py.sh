#!/usr/bin/env bash
# Shared by start-journalnodes.sh and stop-journalnodes.sh: (start|stop) [--config DIR]
set -u
sbin=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
project=$(cd "$sbin/.." && pwd)
case "${1:-}" in
  start|stop) action=$1; shift ;;
  *) echo "Usage: journalnodes-py.sh (start|stop) [--config DIR]" >&2; exit 2 ;;
esac
usage="Usage: $action-journalnodes.sh [--config DIR]"
if [ "${1:-}" = "--config" ]; then
  [ $# -ge 2 ] && [ -n "$2" ] || { echo "$usage" >&2; exit 2; }
  export HADOOP_CONF_DIR=$2
  shift 2
fi
[ $# -eq 0 ] || { echo "$action-journalnodes.sh: unknown argument $1; $usage" >&2; exit 2; }
python=${PYTHON:-python3}
conf_args=()
[ -n "${HADOOP_CONF_DIR:-}" ] && conf_args=(--config "$HADOOP_CONF_DIR")
addresses=$("$python" "$project/bin/hdfs-py" "${conf_args[@]}" getconf -journalNodeAddresses) || exit 1
edits_dir=$("$python" "$project/bin/hdfs-py" "${conf_args[@]}" getconf -confKey dfs.journalnode.edits.dir) || exit 1

local_ips=" 127.0.0.1 ::1 localhost $(hostname) $(hostname -f 2>/dev/null) $(hostname -I 2>/dev/null) "
local_addresses=()
for address in $addresses; do
  host=${address%:*}
  case "$local_ips" in *" $host "*) local_addresses+=("$address") ;; *) ;; esac
  case "$host" in 127.*) [[ " ${local_addresses[*]-} " == *" $address "* ]] || local_addresses+=("$address") ;; esac
done
if [ ${#local_addresses[@]} -eq 0 ]; then
  echo "No JournalNode address of dfs.namenode.shared.edits.dir ($addresses) is on this host." >&2
  exit 1
fi

status=0
if [ ${#local_addresses[@]} -eq 1 ]; then
  "$sbin/hadoop-daemon-py.sh" "$action" journalnode || status=1
  exit $status
fi
for address in "${local_addresses[@]}"; do
  port=${address##*:}
  HADOOP_IDENT_STRING="${HADOOP_IDENT_STRING:-${USER:-$(id -un)}}-jn$port" \
    "$sbin/hadoop-daemon-py.sh" "$action" journalnode \
      -D "dfs.journalnode.rpc-address=$address" \
      -D "dfs.journalnode.http-address=${address%:*}:0" \
      -D "dfs.journalnode.edits.dir=${edits_dir%/}/jn-$port" || status=1
done
exit $status
