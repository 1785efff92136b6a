# hadoop-env-py.sh: Hadoop's hadoop-env.sh for hadoop-qjm-py. The sbin scripts
# (hadoop-daemon-py.sh, start-journalnodes.sh, start-dfs-py.sh, ...) source it from the
# configuration directory in use before they start or stop a daemon. Uncomment and change.

# Where the daemons' .log and .out files go (default: $HADOOP_HOME/logs when HADOOP_HOME is
# set, else /tmp/hadoop-$USER/logs).
# export HADOOP_LOG_DIR=/var/log/hadoop

# Where the pid files go (default: /tmp).
# export HADOOP_PID_DIR=/var/run/hadoop

# Names the pid and log files (default: $USER). Keep the ${...:-} form: start-dfs-py.sh sets
# it for each of two NameNodes sharing a host.
# export HADOOP_IDENT_STRING=${HADOOP_IDENT_STRING:-hdfs}

# Seconds between SIGTERM and SIGKILL when a daemon is stopped (default: 30).
# export HADOOP_STOP_TIMEOUT=30

# The daemons' logging: level and appenders (RFA: the .log file; console: the .out file).
# Per-logger levels are in log4j.properties.
# export HADOOP_DAEMON_ROOT_LOGGER=INFO,RFA

# The interpreter hadoop-qjm-py is installed into (default: the one of the installed hdfs-py).
# export PYTHON=/opt/hadoop-qjm-py/bin/python

# Options of one daemon, as Hadoop's HDFS_<DAEMON>_OPTS: -D settings for it alone.
# export HDFS_JOURNALNODE_OPTS="-Ddfs.journalnode.handler.count=10"
# export HDFS_NAMENODE_OPTS="-Ddfs.namenode.handler.count=20"
# export HDFS_ZKFC_OPTS=""

# The hosts start-dfs-py.sh reaches over ssh, and how (default: ssh -o BatchMode=yes).
# export HADOOP_SSH_OPTS="-o BatchMode=yes -o ConnectTimeout=10"
