"""The failover controller's decisions, as pure functions (STYLE.md habit 1).

What a ZKFailoverController does with a health report, whether a winner of the election
must fence the last active, what the lock and breadcrumb znodes hold, how
``ha.zookeeper.quorum`` / ``ha.zookeeper.acl`` / ``ha.zookeeper.auth`` read: each is decided
here, without a socket, a thread, a file or kazoo. The elector
(:mod:`hadoop_qjm.ha.active_standby_elector`) and the controller
(:mod:`hadoop_qjm.ha.zk_failover_controller`) do the I/O and call these.

References: Hadoop's ZKFailoverController.recheckElectability and
verifyChangedServiceState, ActiveStandbyElector.fenceOldActive, ZKUtil.parseACLs /
parseAuth / resolveConfIndirection, HAZKInfo.proto (ActiveNodeInfo); the QJM design
paper (HDFS-3077) §2.5, footnote 2: leader election is ZooKeeper's, the epoch is the fence.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from hadoop_qjm.common.exceptions import ConfigurationError
from hadoop_qjm.common.protobuf_wire import encode_varint
from hadoop_qjm.ha.ha_service_protocol import HAServiceState

__all__ = [
    "ActiveNodeInfo",
    "ElectionAction",
    "StateCheck",
    "HealthState",
    "ZKAcl",
    "ZKAuth",
    "digest_acl_id",
    "check_reported_state",
    "electability",
    "needs_fencing",
    "parse_acls",
    "parse_auths",
    "parse_zk_quorum",
    "resolve_conf_indirection",
    "service_state_changed_unexpectedly",
]

#: ZooKeeper's permission bits (ZooDefs.Perms).
PERMS = {"r": 1, "w": 2, "c": 4, "d": 8, "a": 16}


class HealthState(enum.Enum):
    """HealthMonitor.State: what the last poll of the local NameNode said."""

    INITIALIZING = "INITIALIZING"
    SERVICE_NOT_RESPONDING = "SERVICE_NOT_RESPONDING"
    SERVICE_HEALTHY = "SERVICE_HEALTHY"
    SERVICE_UNHEALTHY = "SERVICE_UNHEALTHY"
    HEALTH_MONITOR_FAILED = "HEALTH_MONITOR_FAILED"


class ElectionAction(enum.Enum):
    """What the controller does about the election after a health report."""

    #: Healthy: be a candidate (create the lock, or watch it).
    JOIN = "join"
    #: Not ready yet (INITIALIZING): stay out; nothing to fence, we were never active.
    QUIT_NO_FENCE = "quit-no-fence"
    #: Unhealthy or not responding: leave, and leave the breadcrumb so the next active
    #: fences this NameNode (it may still think it is active).
    QUIT_FENCE = "quit-fence"
    #: Barred from joining for a while (it ceded the active role): check again later.
    WAIT = "wait"
    #: Healthy, but the NameNode is an observer: it never becomes active, so it is no
    #: candidate (HDFS-14130); it rejoins when it goes back to standby.
    STAY_OUT = "stay-out"
    #: The health monitor itself died: the controller stops.
    FATAL = "fatal"


def electability(
    health: HealthState, now_ns: int, delay_joining_until_ns: int, *, observer: bool = False
) -> ElectionAction:
    """ZKFailoverController.recheckElectability: the election follows the health, except
    while a cede (``cedeActive``) bars joining until ``delay_joining_until_ns``, and a
    healthy ``observer`` stays out (HDFS-14130: ``serviceState != OBSERVER``)."""
    if delay_joining_until_ns - now_ns > 0:
        return ElectionAction.WAIT
    if health is HealthState.SERVICE_HEALTHY:
        return ElectionAction.STAY_OUT if observer else ElectionAction.JOIN
    if health is HealthState.INITIALIZING:
        return ElectionAction.QUIT_NO_FENCE
    if health in (HealthState.SERVICE_UNHEALTHY, HealthState.SERVICE_NOT_RESPONDING):
        return ElectionAction.QUIT_FENCE
    return ElectionAction.FATAL


def service_state_changed_unexpectedly(expected: HAServiceState, reported: HAServiceState) -> bool:
    """ZKFailoverController.verifyChangedServiceState: the NameNode reports an HA state
    (``active`` / ``standby`` / ``initializing``) other than the one its controller made it
    — it restarted, or someone forced it. Then the controller leaves the election (fencing
    needed) and joins again, so that exactly one node acts on the lock. ``initializing``
    on the controller's side means it has made no claim yet: nothing to compare."""
    return expected is not HAServiceState.INITIALIZING and reported is not expected


class StateCheck(enum.Enum):
    """What a reported HA state tells the controller (verifyChangedServiceState)."""

    #: As expected, or the controller has made no claim yet.
    OK = "ok"
    #: Different, for the first time: maybe a transition in flight; look once more.
    LOOK_AGAIN = "look-again"
    #: Different twice in a row: leave the election (fencing needed) and rejoin after a
    #: short bar, so that exactly one node acts on the lock.
    QUIT = "quit"
    #: The NameNode is an observer (HDFS-14130): leave the election (Hadoop's
    #: ``quitElection(true)``) and stay out while it is one.
    OBSERVER = "observer"


def check_reported_state(
    expected: HAServiceState, reported: HAServiceState, mismatches: int
) -> tuple[StateCheck, int]:
    """ZKFailoverController.verifyChangedServiceState: ``(what to do, mismatches now)``
    given the state the controller made its NameNode (``expected``), the state it reports,
    and how many reports in a row differed before this one. An observer is no surprise
    to look at twice: the controller leaves at once, as Hadoop's."""
    if reported is HAServiceState.OBSERVER and expected is not HAServiceState.OBSERVER:
        return StateCheck.OBSERVER, 0
    if not service_state_changed_unexpectedly(expected, reported):
        return StateCheck.OK, 0
    if mismatches == 0:
        return StateCheck.LOOK_AGAIN, 1
    return StateCheck.QUIT, 0


def needs_fencing(breadcrumb: bytes | None, own: bytes) -> bool:
    """ActiveStandbyElector.fenceOldActive: the winner of the lock fences the node the
    breadcrumb names, unless there is none or it names the winner itself (its own
    controller restarted while it was active)."""
    return breadcrumb is not None and breadcrumb != own


# ---- ActiveNodeInfo: the lock and breadcrumb znodes' data (HAZKInfo.proto) ---------------------


@dataclass(frozen=True)
class ActiveNodeInfo:
    """Who holds (or last held) the lock: Hadoop's ActiveNodeInfo protobuf, byte for byte,
    so that Hadoop's tools read our znodes and we read theirs."""

    nameservice_id: str
    namenode_id: str
    hostname: str
    port: int
    zkfc_port: int

    def to_bytes(self) -> bytes:
        out = bytearray()
        for field, text in ((1, self.nameservice_id), (2, self.namenode_id), (3, self.hostname)):
            raw = text.encode("utf-8")
            out += encode_varint(field << 3 | 2) + encode_varint(len(raw)) + raw
        for field, number in ((4, self.port), (5, self.zkfc_port)):
            # int32: negative values take ten bytes, as protobuf encodes them.
            out += encode_varint(field << 3) + encode_varint(number & 0xFFFFFFFFFFFFFFFF)
        return bytes(out)

    @classmethod
    def from_bytes(cls, data: bytes) -> ActiveNodeInfo:
        """Parse the znode data; ValueError if it is not an ActiveNodeInfo."""
        fields: dict[int, object] = {}
        pos = 0
        while pos < len(data):
            key, pos = _read_varint(data, pos)
            field, wire_type = key >> 3, key & 7
            if wire_type == 0:
                value, pos = _read_varint(data, pos)
                value &= 0xFFFFFFFF
                fields[field] = value - (1 << 32) if value >= 1 << 31 else value
            elif wire_type == 2:
                length, pos = _read_varint(data, pos)
                if pos + length > len(data):
                    raise ValueError("truncated ActiveNodeInfo")
                raw = data[pos : pos + length]
                pos += length
                try:
                    fields[field] = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise ValueError(f"ActiveNodeInfo field {field} is not UTF-8") from e
            else:
                raise ValueError(f"unexpected wire type {wire_type} in ActiveNodeInfo")
        kinds = {1: str, 2: str, 3: str, 4: int, 5: int}
        for field, kind in kinds.items():
            if not isinstance(fields.get(field), kind):
                raise ValueError(f"ActiveNodeInfo lacks field {field}")
        return cls(*(fields[f] for f in sorted(kinds)))  # type: ignore[arg-type]

    def __str__(self) -> str:
        return (
            f"{self.namenode_id} at {self.hostname}:{self.port} (nameservice {self.nameservice_id})"
        )


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("malformed varint in ActiveNodeInfo")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, pos


# ---- configuration: the quorum, ACLs and authentication --------------------------------------

_HOST_PORT = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$")


def parse_zk_quorum(text: str | None, key: str = "ha.zookeeper.quorum") -> str:
    """``host1:2181,host2:2181,host3:2181[/chroot]`` checked and normalized (no blanks);
    ConfigurationError naming ``key`` if it is missing or malformed."""
    if text is None or not text.strip():
        raise ConfigurationError(f"Missing required configuration '{key}' for ZooKeeper quorum")
    value = text.strip()
    hosts, slash, chroot = value.partition("/")
    if slash and (not chroot or chroot.endswith("/") or "//" in chroot):
        raise ConfigurationError(f"Invalid {key} '{value}': bad chroot path '/{chroot}'")
    parts = [p.strip() for p in hosts.split(",")]
    for part in parts:
        match = _HOST_PORT.match(part)
        if not part or match is None:
            raise ConfigurationError(
                f"Invalid {key} '{value}': '{part}' is not host[:port] "
                "(expected host1:2181,host2:2181,…)"
            )
        port = match.group(1)
        if port is not None and not 0 < int(port) < 65536:
            raise ConfigurationError(f"Invalid {key} '{value}': bad port in '{part}'")
    return ",".join(parts) + (slash + chroot if slash else "")


def resolve_conf_indirection(value: str | None, read_file: Callable[[str], str]) -> str | None:
    """ZKUtil.resolveConfIndirection: ``@/path`` stands for the (trimmed) contents of that
    file; anything else is itself. ``read_file`` does the reading."""
    if value is None or not value.startswith("@"):
        return value
    return read_file(value[1:].strip()).strip()


@dataclass(frozen=True)
class ZKAcl:
    """One ACL entry: ``scheme:id:perms`` (ZooKeeper's ACL)."""

    scheme: str
    id: str
    perms: int


@dataclass(frozen=True)
class ZKAuth:
    """One authentication: ``scheme:auth`` (ZKUtil.ZKAuthInfo), e.g. digest ``user:password``."""

    scheme: str
    auth: str


def parse_acls(text: str | None, key: str = "ha.zookeeper.acl") -> tuple[ZKAcl, ...]:
    """ZKUtil.parseACLs: comma-separated ``scheme:id:perms``; the id may hold colons (a
    digest's ``user:hash``), so the scheme ends at the first colon and the permissions start
    after the last. Permissions are letters of ``rwcda``. Empty: no ACL entries."""
    result = []
    for entry in (text or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        first, last = entry.find(":"), entry.rfind(":")
        if first == -1 or first == last:
            raise ConfigurationError(
                f"Invalid {key}: ACL '{entry}' not of expected form scheme:id:perm"
            )
        perms = 0
        for char in entry[last + 1 :]:
            if char not in PERMS:
                raise ConfigurationError(
                    f"Invalid {key}: invalid permission '{char}' in permission string "
                    f"'{entry[last + 1 :]}'"
                )
            perms |= PERMS[char]
        result.append(ZKAcl(entry[:first], entry[first + 1 : last], perms))
    return tuple(result)


def parse_auths(text: str | None, key: str = "ha.zookeeper.auth") -> tuple[ZKAuth, ...]:
    """ZKUtil.parseAuth: comma-separated ``scheme:auth``."""
    result = []
    for entry in (text or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        scheme, colon, auth = entry.partition(":")
        if not colon or not scheme:
            raise ConfigurationError(
                f"Invalid {key}: auth '{entry.split(':')[0]}:…' not of expected form scheme:auth"
            )
        result.append(ZKAuth(scheme, auth))
    return tuple(result)


def digest_acl_id(user_password: str) -> str:
    """``user:base64(sha1(user:password))``: the id of a ``digest`` ACL granting whoever
    authenticates as ``digest:user:password`` (ZooKeeper's DigestAuthenticationProvider)."""
    user = user_password.split(":", 1)[0]
    digest = base64.b64encode(hashlib.sha1(user_password.encode("utf-8")).digest()).decode()
    return f"{user}:{digest}"
