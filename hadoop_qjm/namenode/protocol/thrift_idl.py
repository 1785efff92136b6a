"""The loaded ``namenode.thrift`` IDL (thriftpy2 builds the classes at import time).

Only :mod:`~hadoop_qjm.namenode.protocol.messages` and
:mod:`~hadoop_qjm.namenode.protocol.rpc` should need it.
"""

from __future__ import annotations

from importlib import resources
from types import ModuleType

import thriftpy2

__all__ = ["IDL_FILE_NAME", "namenode_thrift", "SERVICES"]

IDL_FILE_NAME = "namenode.thrift"


def _load() -> ModuleType:
    # Package data (setup.cfg); the module name must end in "_thrift" (thriftpy2's rule
    # for picklable structs) and must not clash with qjournal's.
    ref = resources.files(__package__).joinpath(IDL_FILE_NAME)
    with resources.as_file(ref) as path:
        return thriftpy2.load(str(path), module_name="hadoop_qjm_namenode_thrift")


#: The thriftpy2 module: structs (``HdfsFileStatus``, ``NamespaceInfo``, …), the exception
#: ``RemoteException`` and the three services.
namenode_thrift = _load()

#: The services the NameNode serves on its RPC port; their method names are disjoint.
SERVICES = (
    namenode_thrift.ClientProtocol,
    namenode_thrift.NamenodeProtocol,
    namenode_thrift.HAServiceProtocol,
)
