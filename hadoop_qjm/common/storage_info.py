"""StorageInfo and NamespaceInfo: the identity of a namespace's storage."""

from __future__ import annotations

from dataclasses import dataclass

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import IllegalArgumentException

__all__ = ["StorageInfo", "NamespaceInfo", "NODE_TYPE_JOURNAL_NODE", "NODE_TYPE_NAME_NODE"]

NODE_TYPE_JOURNAL_NODE = "JOURNAL_NODE"
NODE_TYPE_NAME_NODE = "NAME_NODE"


@dataclass(frozen=True)
class StorageInfo:
    """Common storage identity: what a ``VERSION`` file holds (besides the node type)."""

    layout_version: int
    namespace_id: int
    cluster_id: str
    ctime: int = 0

    def to_colon_separated_string(self) -> str:
        """Hadoop's ``LV:nsId:cTime:clusterId`` form, used by ``/getJournal?storageInfo=``."""
        return f"{self.layout_version}:{self.namespace_id}:{self.ctime}:{self.cluster_id}"

    @classmethod
    def from_colon_separated_string(cls, text: str) -> StorageInfo:
        parts = text.split(":", 3)
        if len(parts) != 4:
            raise IllegalArgumentException(
                f"Invalid storage info '{text}': expected LV:namespaceId:cTime:clusterId"
            )
        try:
            return cls(int(parts[0]), int(parts[1]), parts[3], int(parts[2]))
        except ValueError:
            raise IllegalArgumentException(
                f"Invalid storage info '{text}': expected LV:namespaceId:cTime:clusterId"
            ) from None

    def to_properties(self) -> dict[str, str]:
        return {
            "namespaceID": str(self.namespace_id),
            "clusterID": self.cluster_id,
            "cTime": str(self.ctime),
            "layoutVersion": str(self.layout_version),
        }


@dataclass(frozen=True)
class NamespaceInfo(StorageInfo):
    """NamespaceInfo: StorageInfo plus the block pool id (HdfsServer.proto NamespaceInfoProto)."""

    block_pool_id: str = ""
    build_version: str = ""
    software_version: str = ""

    def __init__(
        self,
        namespace_id: int,
        cluster_id: str,
        block_pool_id: str,
        ctime: int = 0,
        layout_version: int = CURRENT_LAYOUT_VERSION,
        build_version: str = "",
        software_version: str = "",
    ) -> None:
        object.__setattr__(self, "layout_version", int(layout_version))
        object.__setattr__(self, "namespace_id", int(namespace_id))
        object.__setattr__(self, "cluster_id", str(cluster_id))
        object.__setattr__(self, "ctime", int(ctime))
        object.__setattr__(self, "block_pool_id", str(block_pool_id))
        object.__setattr__(self, "build_version", str(build_version))
        object.__setattr__(self, "software_version", str(software_version))

    def storage_info(self) -> StorageInfo:
        return StorageInfo(self.layout_version, self.namespace_id, self.cluster_id, self.ctime)
