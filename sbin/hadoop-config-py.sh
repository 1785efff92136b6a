# Sourced by the sbin scripts (Hadoop's libexec/hadoop-config.sh): reads hadoop-env-py.sh and
# finds the Python interpreter to run hadoop-qjm-py with. Defines $python and run_py.
#
# The interpreter: $PYTHON when set; else the one the package was installed into (the shebang
# of the hdfs-py console script installed beside these scripts, or first on PATH); else python3.

sbin=${sbin:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}

# The configuration directory in use: --config / $HADOOP_CONF_DIR, else the installation's
# (conf/ of a checkout, <prefix>/etc/hadoop-qjm-py of an installed package). Its
# hadoop-env-py.sh is read as Hadoop reads hadoop-env.sh.
project=$(cd "$sbin/.." && pwd)
conf_in_use=${HADOOP_CONF_DIR:-}
if [ -z "$conf_in_use" ]; then
  for candidate in "$project/conf" "$project/etc/hadoop-qjm-py"; do
    [ -f "$candidate/hdfs-site.xml" ] && { conf_in_use=$candidate; break; }
  done
fi
if [ -n "$conf_in_use" ] && [ -f "$conf_in_use/hadoop-env-py.sh" ]; then
  # shellcheck disable=SC1091
  . "$conf_in_use/hadoop-env-py.sh"
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
