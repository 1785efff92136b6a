#!/usr/bin/env bash
# Start or stop a hadoop-qjm-py daemon in the background, as Hadoop's hadoop-daemon.sh does
# (the same as `hdfs-py --daemon ACTION COMMAND`, which works without this directory).
#
#   sbin/hadoop-daemon-py.sh [--config DIR] (start|stop|status) (journalnode|namenode|zkfc) [-D key=value ...] [ARGS ...]
#
# start: each -D goes to hdfs-py before the command, the other ARGS after it
# (e.g. `start namenode -nnid nn1`); stop and status of a namenode or zkfc take -nnid too.
# A namenode's or zkfc's pid file is named as start-dfs-py.sh names it: with the NameNode id
# (hadoop-<ident>-<nnid>-<command>.pid) when several NameNodes are on this machine.
#
# Environment (Hadoop's names; hadoop-env-py.sh in the configuration directory may set them):
#   HADOOP_CONF_DIR      configuration directory (or --config DIR)
#   HADOOP_LOG_DIR       the .log and .out files  (default: $HADOOP_HOME/logs, else /tmp/hadoop-$USER/logs)
#   HADOOP_PID_DIR       the pid file             (default: /tmp)
#   HADOOP_IDENT_STRING  names the pid and log files (default: $USER)
#   HADOOP_STOP_TIMEOUT  seconds to wait after SIGTERM before SIGKILL (default: 30)
#   HADOOP_DAEMON_ROOT_LOGGER  the daemon's logging (default: INFO,RFA - the .log file only)
#   PYTHON               the interpreter (default: the one hadoop-qjm-py is installed into)
set -u
usage="Usage: hadoop-daemon-py.sh [--config DIR] (start|stop|status) (journalnode|namenode|zkfc) [-D key=value ...] [ARGS ...]"
sbin=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ "${1:-}" = "--config" ]; then
  [ $# -ge 2 ] && [ -n "$2" ] || { echo "$usage" >&2; exit 2; }
  export HADOOP_CONF_DIR=$2
  shift 2
fi
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
action=$1; command=$2; shift 2
case "$action" in start|stop|status) ;; *) echo "$usage" >&2; exit 2 ;; esac
case "$command" in journalnode|namenode|zkfc) ;; *) echo "$usage" >&2; exit 2 ;; esac
# shellcheck source=hadoop-config-py.sh
. "$sbin/hadoop-config-py.sh"

# hdfs-py takes -D before the command, the command's own arguments after it.
generic_args=()
command_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -D)
      [ $# -ge 2 ] || { echo "-D needs a value; $usage" >&2; exit 2; }
      generic_args+=("-D$2")
      shift 2
      ;;
    -D*) generic_args+=("$1"); shift ;;
    *) command_args+=("$1"); shift ;;
  esac
done
run_py -m hadoop_qjm.cli ${generic_args[@]+"${generic_args[@]}"} --daemon "$action" "$command" \
  ${command_args[@]+"${command_args[@]}"}
