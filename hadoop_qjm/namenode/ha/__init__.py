"""High availability: HA configuration, the standby's EditLogTailer and StandbyCheckpointer."""
