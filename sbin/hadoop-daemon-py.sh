#!/usr/bin/env bash
# Start or stop a hadoop-qjm-py daemon in the background, as Hadoop's hadoop-daemon.sh does.
#
#   sbin/hadoop-daemon-py.sh [--config DIR] (start|stop|status) (journalnode|namenode|zkfc) [-D key=value ...] [ARGS ...]
#
# start: each -D goes to hdfs-py before the command, the other ARGS after it
# (e.g. `start namenode -nnid nn1`).
#
# Environment (Hadoop's names):
#   HADOOP_CONF_DIR      configuration directory (or --config DIR)
#   HADOOP_LOG_DIR       where the .out and .log files go       (default: <project>/logs)
#   HADOOP_PID_DIR       where the pid file goes                 (default: /tmp)
#   HADOOP_IDENT_STRING  names the pid and log files    (default: $USER, else the user name)
#   HADOOP_STOP_TIMEOUT  seconds to wait after SIGTERM before SIGKILL (default: 30)
set -u
usage="Usage: hadoop-daemon-py.sh [--config DIR] (start|stop|status) (journalnode|namenode|zkfc) [-D key=value ...] [ARGS ...]"
bin=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [ "${1:-}" = "--config" ]; then
  [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
  export HADOOP_CONF_DIR=$2
  shift 2
fi
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
action=$1; command=$2; shift 2
case "$command" in journalnode|namenode|zkfc) ;; *) echo "$usage" >&2; exit 2 ;; esac

ident=${HADOOP_IDENT_STRING:-${USER:-$(id -un)}}
log_dir=${HADOOP_LOG_DIR:-$bin/logs}
pid_dir=${HADOOP_PID_DIR:-/tmp}
stop_timeout=${HADOOP_STOP_TIMEOUT:-30}
pid_file=$pid_dir/hadoop-$ident-$command.pid
out_file=$log_dir/hadoop-$ident-$command-$(hostname).out
python=${PYTHON:-python3}

running_pid() {
  [ -f "$pid_file" ] || return 1
  local pid
  pid=$(cat "$pid_file" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

case "$action" in
  start)
    if pid=$(running_pid); then
      echo "$command is running as process $pid.  Stop it first." >&2
      exit 1
    fi
    mkdir -p "$log_dir" "$pid_dir" || exit 1
    conf_args=()
    [ -n "${HADOOP_CONF_DIR:-}" ] && conf_args=(--config "$HADOOP_CONF_DIR")
    # hdfs-py takes -D (and --config) before the command, the command's own arguments
    # after it.
    generic_args=()
    command_args=()
    while [ $# -gt 0 ]; do
      case "$1" in
        -D|--config)
          [ $# -ge 2 ] || { echo "$1 needs a value; $usage" >&2; exit 2; }
          generic_args+=("$1" "$2")
          shift 2
          ;;
        -D*|--config=*) generic_args+=("$1"); shift ;;
        *) command_args+=("$1"); shift ;;
      esac
    done
    echo "starting $command, logging to $out_file"
    HADOOP_IDENT_STRING=$ident HADOOP_LOG_DIR=$log_dir HADOOP_ROOT_LOGGER=${HADOOP_ROOT_LOGGER:-INFO,RFA} \
      nohup "$python" "$bin/bin/hdfs-py" ${conf_args[@]+"${conf_args[@]}"} \
      ${generic_args[@]+"${generic_args[@]}"} "$command" ${command_args[@]+"${command_args[@]}"} \
      >"$out_file" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$pid_file"
    # Wait until the daemon says it is serving, or has died.
    for _ in $(seq 1 300); do
      if grep -q "started pid=" "$out_file" 2>/dev/null; then
        grep "started pid=" "$out_file" | tail -n 1
        exit 0
      fi
      if ! kill -0 "$pid" 2>/dev/null; then
        rm -f "$pid_file"
        echo "$command failed to start:" >&2
        tail -n 5 "$out_file" >&2
        exit 1
      fi
      sleep 0.1
    done
    echo "$command (pid $pid) did not report that it started within 30s; see $out_file" >&2
    exit 1
    ;;
  stop)
    if pid=$(running_pid); then
      echo "stopping $command"
      kill -TERM "$pid"
      for _ in $(seq 1 $((stop_timeout * 10))); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$pid_file"; exit 0; }
        sleep 0.1
      done
      echo "$command did not stop gracefully after $stop_timeout seconds: killing with kill -9" >&2
      kill -KILL "$pid" 2>/dev/null
      rm -f "$pid_file"
    else
      echo "no $command to stop"
      rm -f "$pid_file"
    fi
    ;;
  status)
    if pid=$(running_pid); then
      echo "$command is running as process $pid"
    else
      echo "$command is not running"
      exit 1
    fi
    ;;
  *)
    echo "$usage" >&2
    exit 2
    ;;
esac
