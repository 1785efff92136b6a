# Sourced by the sbin scripts (Hadoop's libexec/hadoop-config.sh): reads hadoop-env-py.sh and
# finds the Python interpreter to run hadoop-qjm-py with. Defines $python and run_py.
#
# The interpreter: $PYTHON when set; else the one the package was installed into (the shebang
# of the hdfs-py console script installed beside these scripts, or first on PATH); else python3.

sbin=${sbin:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}

# hadoop-env-py.sh of the configuration directory, as Hadoop reads hadoop-env.sh.
if [ -n "${HADOOP_CONF_DIR:-}" ] && [ -f "$HADOOP_CONF_DIR/hadoop-env-py.sh" ]; then
  # shellcheck disable=SC1091
  . "$HADOOP_CONF_DIR/hadoop-env-py.sh"
fi

installed_python() {
  local script interp
  for script in "$sbin/hdfs-py" "$(command -v hdfs-py 2>/dev/null)"; do
    [ -n "$script" ] && [ -f "$script" ] || continue
    interp=$(head -n 1 "$script" 2>/dev/null)
    case "$interp" in '#!'*) interp=${interp#\#!} ;; *) continue ;; esac
    interp=${interp# }
    [ -x "$interp" ] && { echo "$interp"; return 0; }
  done
  return 1
}

python=${PYTHON:-$(installed_python || echo python3)}

# A checkout (this directory beside hadoop_qjm/) runs its own code, installed or not.
project=$(cd "$sbin/.." && pwd)
if [ -d "$project/hadoop_qjm" ]; then
  export PYTHONPATH="$project${PYTHONPATH:+:$PYTHONPATH}"
fi

run_py() {
  if ! "$python" -c 'import hadoop_qjm' 2>/dev/null; then
    echo "$(basename "$0"): $python cannot import hadoop_qjm: pip install hadoop-qjm-py into it, or set PYTHON to the interpreter it is installed into" >&2
    exit 1
  fi
  "$python" "$@"
}
