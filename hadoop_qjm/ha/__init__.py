"""Automatic failover: Hadoop's org.apache.hadoop.ha on ZooKeeper (through kazoo).

:class:`~hadoop_qjm.ha.zk_failover_controller.ZKFailoverController` runs beside each
NameNode; its :class:`~hadoop_qjm.ha.health_monitor.HealthMonitor` polls the NameNode,
its :class:`~hadoop_qjm.ha.active_standby_elector.ActiveStandbyElector` holds or watches
the lock znode, and :class:`~hadoop_qjm.ha.node_fencer.NodeFencer` runs
``dfs.ha.fencing.methods`` before a new active takes over. The election decisions are
pure (:mod:`hadoop_qjm.ha.election_rules`, the elector's state machine
:mod:`hadoop_qjm.ha.elector_states`); kazoo, sockets and processes are at the edge.
"""
