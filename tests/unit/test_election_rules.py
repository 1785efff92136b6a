"""election_rules: the failover controller's pure decisions (STYLE.md habits 1 and 9).

Tables for each rule, and hypothesis against a literal reading of the Hadoop code each rule
ports: ZKFailoverController.recheckElectability, ZKUtil.parseACLs / parseAuth /
resolveConfIndirection; ActiveNodeInfo against Hadoop's protobuf bytes; the purity check
(tests/unit/test_rules_purity.py covers this module). No socket, thread or kazoo
session here (kazoo's digest helper is pure and is the oracle for ``digest_acl_id``).
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from kazoo.security import make_digest_acl_credential

from hadoop_qjm.common.exceptions import ConfigurationError
from hadoop_qjm.ha.election_rules import (
    ActiveNodeInfo,
    ElectionAction,
    HealthState,
    StateCheck,
    ZKAcl,
    ZKAuth,
    check_reported_state,
    digest_acl_id,
    electability,
    needs_fencing,
    parse_acls,
    parse_auths,
    parse_zk_quorum,
    resolve_conf_indirection,
    service_state_changed_unexpectedly,
)
from hadoop_qjm.ha.ha_service_protocol import HAServiceState

pytestmark = pytest.mark.timeout(120)

QUORUM_KEY = "ha.zookeeper.quorum"
ACL_KEY = "ha.zookeeper.acl"
AUTH_KEY = "ha.zookeeper.auth"


# ---- electability: ZKFailoverController.recheckElectability ------------------------------------

NOW = 5_000_000_000
EXPECTED_WHEN_FREE = {
    HealthState.SERVICE_HEALTHY: ElectionAction.JOIN,
    HealthState.INITIALIZING: ElectionAction.QUIT_NO_FENCE,
    HealthState.SERVICE_UNHEALTHY: ElectionAction.QUIT_FENCE,
    HealthState.SERVICE_NOT_RESPONDING: ElectionAction.QUIT_FENCE,
    HealthState.HEALTH_MONITOR_FAILED: ElectionAction.FATAL,
}


def test_the_table_covers_every_health_state() -> None:
    assert set(EXPECTED_WHEN_FREE) == set(HealthState)


@pytest.mark.parametrize("health", list(HealthState), ids=lambda h: h.value)
@pytest.mark.parametrize(
    ("delay_until_ns", "barred"),
    [
        (0, False),  # never ceded
        (NOW - 1_000_000_000, False),  # the bar ran out a second ago
        (NOW - 1, False),
        (NOW, False),  # remaining delay 0 is not > 0: free
        (NOW + 1, True),
        (NOW + 1_000_000_000, True),  # the 1 s bar after an unexpected state change
        (NOW + 10_000_000_000, True),  # a cede of 10 s
    ],
)
def test_electability_table(health: HealthState, delay_until_ns: int, barred: bool) -> None:
    expected = ElectionAction.WAIT if barred else EXPECTED_WHEN_FREE[health]
    assert electability(health, NOW, delay_until_ns) is expected


def literal_recheck_electability(
    health: HealthState, now_ns: int, delay_until_ns: int
) -> ElectionAction:
    """recheckElectability, line by line: the delay first (scheduleRecheck; return), then
    the switch on lastHealthState."""
    remaining_delay = delay_until_ns - now_ns
    if remaining_delay > 0:
        return ElectionAction.WAIT
    if health == HealthState.SERVICE_HEALTHY:
        return ElectionAction.JOIN  # elector.joinElection(targetToData(localTarget))
    if health == HealthState.INITIALIZING:
        return ElectionAction.QUIT_NO_FENCE  # elector.quitElection(false)
    if health in (HealthState.SERVICE_UNHEALTHY, HealthState.SERVICE_NOT_RESPONDING):
        return ElectionAction.QUIT_FENCE  # elector.quitElection(true)
    if health == HealthState.HEALTH_MONITOR_FAILED:
        return ElectionAction.FATAL  # fatalError("Health monitor failed!")
    raise AssertionError(f"Unhandled state: {health}")


@settings(max_examples=500, deadline=None)
@given(
    health=st.sampled_from(list(HealthState)),
    now_ns=st.integers(0, 2**63 - 1),
    offset_ns=st.one_of(st.integers(-(2**40), 2**40), st.integers(-3, 3)),
)
def test_electability_is_recheck_electability(
    health: HealthState, now_ns: int, offset_ns: int
) -> None:
    delay_until_ns = max(now_ns + offset_ns, 0)
    assert electability(health, now_ns, delay_until_ns) is literal_recheck_electability(
        health, now_ns, delay_until_ns
    )


@pytest.mark.parametrize("health", list(HealthState), ids=lambda h: h.value)
def test_a_healthy_observer_stays_out_and_is_otherwise_like_any_node(
    health: HealthState,
) -> None:
    """HDFS-14130's ``if (serviceState != OBSERVER) joinElection``: only the join changes."""
    free = EXPECTED_WHEN_FREE[health]
    expected = ElectionAction.STAY_OUT if free is ElectionAction.JOIN else free
    assert electability(health, NOW, 0, observer=True) is expected
    assert electability(health, NOW, NOW + 1, observer=True) is ElectionAction.WAIT


@pytest.mark.parametrize("mismatches", [0, 1])
@pytest.mark.parametrize(
    "expected", [HAServiceState.ACTIVE, HAServiceState.STANDBY, HAServiceState.INITIALIZING]
)
def test_a_report_of_observer_leaves_at_once(expected: HAServiceState, mismatches: int) -> None:
    assert check_reported_state(expected, HAServiceState.OBSERVER, mismatches) == (
        StateCheck.OBSERVER,
        0,
    )


def test_an_observer_going_back_to_standby_is_a_change_seen_twice() -> None:
    observer = HAServiceState.OBSERVER
    assert check_reported_state(observer, observer, 1) == (StateCheck.OK, 0)
    assert check_reported_state(observer, HAServiceState.STANDBY, 0) == (StateCheck.LOOK_AGAIN, 1)
    assert check_reported_state(observer, HAServiceState.STANDBY, 1) == (StateCheck.QUIT, 0)


# ---- needs_fencing: ActiveStandbyElector.fenceOldActive ----------------------------------------

OWN = ActiveNodeInfo("mycluster", "nn1", "127.0.0.1", 8020, 8019).to_bytes()
OTHER = ActiveNodeInfo("mycluster", "nn2", "127.0.0.1", 8021, 8019).to_bytes()


@pytest.mark.parametrize(
    ("breadcrumb", "expected"),
    [
        (None, False),  # no breadcrumb: the last active left cleanly, or there was none
        (OWN, False),  # our own: our controller restarted while we were active
        (OTHER, True),
        (b"", True),  # an empty breadcrumb is not ours: fence (Arrays.equals is false)
        (OWN + b"\x00", True),
    ],
)
def test_needs_fencing(breadcrumb: bytes | None, expected: bool) -> None:
    assert needs_fencing(breadcrumb, OWN) is expected


@given(st.one_of(st.none(), st.binary(max_size=40)), st.binary(max_size=40))
def test_needs_fencing_is_fence_old_active(breadcrumb: bytes | None, own: bytes) -> None:
    literal = breadcrumb is not None and not breadcrumb == own
    assert needs_fencing(breadcrumb, own) is literal


# ---- service_state_changed_unexpectedly: verifyChangedServiceState -----------------------------

INITIALIZING, ACTIVE, STANDBY = (
    HAServiceState.INITIALIZING,
    HAServiceState.ACTIVE,
    HAServiceState.STANDBY,
)
STATES = [INITIALIZING, ACTIVE, STANDBY]


@pytest.mark.parametrize("expected", STATES)
@pytest.mark.parametrize("reported", STATES)
def test_service_state_changed_unexpectedly(
    expected: HAServiceState, reported: HAServiceState
) -> None:
    changed = expected != INITIALIZING and reported != expected
    assert service_state_changed_unexpectedly(expected, reported) is changed


@given(
    expected=st.sampled_from(STATES),
    reports=st.lists(st.sampled_from(STATES), max_size=12),
)
def test_check_reported_state_quits_on_the_second_mismatch_in_a_row(
    expected: HAServiceState, reports: list[HAServiceState]
) -> None:
    """A literal reading of verifyChangedServiceState's serviceStateMismatchCount: a first
    mismatch is looked at again, a second in a row quits, a match resets the count."""
    mismatches = 0
    for reported in reports:
        check, mismatches_after = check_reported_state(expected, reported, mismatches)
        differs = expected != INITIALIZING and reported != expected
        if not differs:
            assert (check, mismatches_after) == (StateCheck.OK, 0)
        elif mismatches == 0:
            assert (check, mismatches_after) == (StateCheck.LOOK_AGAIN, 1)
        else:
            assert (check, mismatches_after) == (StateCheck.QUIT, 0)
        mismatches = mismatches_after


def test_service_state_changed_examples() -> None:
    assert service_state_changed_unexpectedly(ACTIVE, STANDBY)  # someone forced it
    assert service_state_changed_unexpectedly(STANDBY, ACTIVE)  # a manual transition
    assert service_state_changed_unexpectedly(ACTIVE, INITIALIZING)  # it restarted
    assert not service_state_changed_unexpectedly(ACTIVE, ACTIVE)
    assert not service_state_changed_unexpectedly(INITIALIZING, ACTIVE)  # no claim yet


# ---- ActiveNodeInfo: HAZKInfo.proto, byte for byte ---------------------------------------------

#: What Hadoop's ActiveNodeInfo.newBuilder()...build().toByteArray() gives.
HADOOP_VECTOR = bytes.fromhex(
    "0a096d79636c757374657212036e6e311a093132372e302e302e312099fd0228ffe002"
)
VECTOR_INFO = ActiveNodeInfo("mycluster", "nn1", "127.0.0.1", 48793, 45183)


def test_to_bytes_is_hadoops_encoding() -> None:
    assert VECTOR_INFO.to_bytes() == HADOOP_VECTOR


def test_from_bytes_reads_hadoops_encoding() -> None:
    assert ActiveNodeInfo.from_bytes(HADOOP_VECTOR) == VECTOR_INFO


def test_from_bytes_accepts_fields_in_any_order_and_skips_unknown_ones() -> None:
    # protobuf parsers accept any field order; an unknown varint field (6) is skipped.
    fields = [HADOOP_VECTOR[0:11], HADOOP_VECTOR[11:16], HADOOP_VECTOR[16:27]]
    reordered = HADOOP_VECTOR[27:] + fields[2] + fields[0] + fields[1] + b"\x30\x01"
    assert ActiveNodeInfo.from_bytes(reordered) == VECTOR_INFO


def test_a_negative_port_takes_ten_bytes_as_protobuf_int32() -> None:
    encoded = ActiveNodeInfo("", "", "", -1, 0).to_bytes()
    fields = ["0a00", "1200", "1a00", "20ffffffffffffffffff01", "2800"]
    assert encoded == bytes.fromhex("".join(fields))
    assert ActiveNodeInfo.from_bytes(encoded).port == -1


INT32 = st.integers(-(2**31), 2**31 - 1)


@settings(max_examples=300)
@given(
    nameservice=st.text(),
    nnid=st.text(),
    hostname=st.text(),
    port=st.one_of(st.integers(0, 65535), INT32),
    zkfc_port=st.one_of(st.integers(0, 65535), INT32),
)
@example("mycluster", "nn1", "127.0.0.1", 48793, 45183)
@example("ñs-ü", "nn\u00e9\U0001f600", "::1", -(2**31), 2**31 - 1)
def test_active_node_info_round_trip(
    nameservice: str, nnid: str, hostname: str, port: int, zkfc_port: int
) -> None:
    info = ActiveNodeInfo(nameservice, nnid, hostname, port, zkfc_port)
    assert ActiveNodeInfo.from_bytes(info.to_bytes()) == info


@pytest.mark.parametrize("length", range(len(HADOOP_VECTOR)))
def test_every_truncation_of_hadoops_bytes_is_a_value_error(length: int) -> None:
    with pytest.raises(ValueError):
        ActiveNodeInfo.from_bytes(HADOOP_VECTOR[:length])


@pytest.mark.parametrize(
    "data",
    [
        b"\xff" * 11,  # a varint that never ends
        b"\x0a\x05abc",  # a length past the end
        b"\x0a\x02\xff\xfe" + HADOOP_VECTOR[4:],  # not UTF-8
        b"\x09" + b"\x00" * 8 + HADOOP_VECTOR,  # wire type 1 (fixed64)
        b"\x0d\x00\x00\x00\x00" + HADOOP_VECTOR,  # wire type 5 (fixed32)
        b"\x0b" + HADOOP_VECTOR,  # wire type 3 (start group)
        HADOOP_VECTOR.replace(b"\x20\x99\xfd\x02", b"\x22\x01x"),  # port as a string
        b"\x08\x01" + HADOOP_VECTOR[11:],  # nameservice as a number, no string for field 1
        b"garbage, not a protobuf",
    ],
)
def test_garbage_is_a_value_error(data: bytes) -> None:
    with pytest.raises(ValueError):
        ActiveNodeInfo.from_bytes(data)


@settings(max_examples=500)
@given(st.binary(max_size=64))
@example(HADOOP_VECTOR)
def test_from_bytes_on_any_bytes_parses_or_raises_value_error(data: bytes) -> None:
    try:
        info = ActiveNodeInfo.from_bytes(data)
    except ValueError:
        return
    assert isinstance(info, ActiveNodeInfo)
    assert ActiveNodeInfo.from_bytes(info.to_bytes()) == info


# ---- parse_zk_quorum ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("h1:2181,h2:2181/chroot", "h1:2181,h2:2181/chroot"),
        ("h1", "h1"),
        ("[::1]:2181", "[::1]:2181"),
        ("127.0.0.1:2181", "127.0.0.1:2181"),
        ("zk-1.example.com:2181,zk_2:2182,zk3", "zk-1.example.com:2181,zk_2:2182,zk3"),
        (" h1:2181 , h2:2181 ", "h1:2181,h2:2181"),
        ("h1:2181/a/b", "h1:2181/a/b"),
        ("h1:65535", "h1:65535"),
    ],
)
def test_good_quorums(text: str, normalized: str) -> None:
    assert parse_zk_quorum(text) == normalized


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "   ",
        "h1:",
        "h1:99999",
        "h1:65536",
        "h1:0",
        "h1,,h2",
        ",h1",
        "h1,",
        "h1:2181/",
        "h1:2181/a//b",
        "h1:2181/a/",
        "h1 h2",
        "127.0.0.1:notaport",
        "h1:-1",
        "h1:2181:2182",
    ],
)
def test_bad_quorums_name_the_key(text: str | None) -> None:
    with pytest.raises(ConfigurationError) as e:
        parse_zk_quorum(text)
    assert QUORUM_KEY in str(e.value)
    assert len(str(e.value).splitlines()) == 1


def test_bad_quorum_names_the_key_it_was_read_from() -> None:
    with pytest.raises(ConfigurationError, match="yarn.resourcemanager.zk-address"):
        parse_zk_quorum("h1:", key="yarn.resourcemanager.zk-address")


# ---- parse_acls / parse_auths: ZKUtil.parseACLs / parseAuth ------------------------------------


def guava_split(text: str) -> list[str]:
    """Splitter.on(',').omitEmptyStrings().trimResults() (emptiness checked after trimming)."""
    return [part.strip() for part in text.split(",") if part.strip()]


class Bad(Exception):
    """The literal reading threw BadAclFormatException / BadAuthFormatException."""


def literal_parse_acls(acl_string: str | None) -> list[tuple[str, str, int]]:
    if acl_string is None:
        return []
    acl = []
    for a in guava_split(acl_string):
        first_colon = a.find(":")
        last_colon = a.rfind(":")
        if first_colon == -1 or last_colon == -1 or first_colon == last_colon:
            raise Bad(f"ACL '{a}' not of expected form scheme:id:perm")
        perm_string = a[last_colon + 1 :]
        perm = 0
        for c in perm_string:
            if c == "r":
                perm |= 1  # ZooDefs.Perms.READ
            elif c == "w":
                perm |= 2  # WRITE
            elif c == "c":
                perm |= 4  # CREATE
            elif c == "d":
                perm |= 8  # DELETE
            elif c == "a":
                perm |= 16  # ADMIN
            else:
                raise Bad(f"Invalid permission '{c}' in permission string '{perm_string}'")
        acl.append((a[:first_colon], a[first_colon + 1 : last_colon], perm))
    return acl


def java_split_limit_2(comp: str, sep: str) -> list[str]:
    """String.split(sep, 2) for a one-character ``sep``: the trailing empty part is kept."""
    i = comp.find(sep)
    return [comp] if i == -1 else [comp[:i], comp[i + 1 :]]


def literal_parse_auth(auth_string: str | None) -> list[tuple[str, str]]:
    if auth_string is None:
        return []
    ret = []
    for comp in guava_split(auth_string):
        parts = java_split_limit_2(comp, ":")
        if len(parts) != 2:
            raise Bad(f"Auth '{comp}' not of expected form scheme:auth")
        ret.append((parts[0], parts[1]))
    return ret


ACL_ALPHABET = "rwcdaRxz:,; \tdigestworldanyoneip@/.=+1é"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, ()),
        ("", ()),
        (" , ,", ()),
        ("world:anyone:rwcda", (ZKAcl("world", "anyone", 31),)),
        (
            "digest:hdfs-zkfcs:vlUvLnd8MlacsE80rDuu6ONESbM=:rwcda",
            (ZKAcl("digest", "hdfs-zkfcs:vlUvLnd8MlacsE80rDuu6ONESbM=", 31),),
        ),
        (
            "sasl:hdfs/host1@MY.DOMAIN:cdrwa, sasl:hdfs/host2@MY.DOMAIN:r",
            (ZKAcl("sasl", "hdfs/host1@MY.DOMAIN", 31), ZKAcl("sasl", "hdfs/host2@MY.DOMAIN", 1)),
        ),
        ("ip:10.0.0.1:", (ZKAcl("ip", "10.0.0.1", 0),)),  # no letters: no permission
        ("world::rr", (ZKAcl("world", "", 1),)),
    ],
)
def test_parse_acls_table(text: str | None, expected: tuple[ZKAcl, ...]) -> None:
    assert parse_acls(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("world:anyone:rwxz", "invalid permission 'x'"),
        ("world:anyone:RWCDA", "invalid permission 'R'"),
        ("world:anyone", "not of expected form scheme:id:perm"),
        ("worldanyone", "not of expected form scheme:id:perm"),
        ("world:anyone:rwcda,broken", "not of expected form scheme:id:perm"),
    ],
)
def test_bad_acls_name_the_key(text: str, why: str) -> None:
    with pytest.raises(ConfigurationError) as e:
        parse_acls(text)
    assert ACL_KEY in str(e.value) and why in str(e.value)


@settings(max_examples=1000)
@given(st.one_of(st.none(), st.text(alphabet=ACL_ALPHABET, max_size=40)))
@example("digest:u:p:rw,world:anyone:cda")
@example(":x:r")
def test_parse_acls_is_zkutil_parse_acls(text: str | None) -> None:
    try:
        literal = literal_parse_acls(text)
    except Bad:
        with pytest.raises(ConfigurationError, match=ACL_KEY):
            parse_acls(text)
        return
    assert [(a.scheme, a.id, a.perms) for a in parse_acls(text)] == literal


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, ()),
        ("", ()),
        ("digest:hdfs-zkfcs:secret", (ZKAuth("digest", "hdfs-zkfcs:secret"),)),
        ("digest:a:b, sasl:x", (ZKAuth("digest", "a:b"), ZKAuth("sasl", "x"))),
        ("digest:", (ZKAuth("digest", ""),)),  # split(":", 2) keeps the empty auth
    ],
)
def test_parse_auths_table(text: str | None, expected: tuple[ZKAuth, ...]) -> None:
    assert parse_auths(text) == expected


@pytest.mark.parametrize("text", ["digest", "digest:a,secret", "  nocolon  "])
def test_bad_auths_name_the_key(text: str) -> None:
    with pytest.raises(ConfigurationError) as e:
        parse_auths(text)
    assert AUTH_KEY in str(e.value) and "scheme:auth" in str(e.value)


def test_an_empty_auth_scheme_is_refused_up_front() -> None:
    # A deliberate difference: Hadoop's parseAuth accepts ":secret" (scheme ""), and
    # ZooKeeper then fails the session with AUTH_FAILED; the port says so at once.
    assert literal_parse_auth(":secret") == [("", "secret")]
    with pytest.raises(ConfigurationError, match=AUTH_KEY):
        parse_auths(":secret")


@settings(max_examples=1000)
@given(st.one_of(st.none(), st.text(alphabet=ACL_ALPHABET, max_size=40)))
@example("digest:u:p,sasl:x")
def test_parse_auths_is_zkutil_parse_auth(text: str | None) -> None:
    try:
        literal = literal_parse_auth(text)
    except Bad:
        with pytest.raises(ConfigurationError, match=AUTH_KEY):
            parse_auths(text)
        return
    if any(scheme == "" for scheme, _ in literal):  # the one deliberate difference (above)
        with pytest.raises(ConfigurationError, match=AUTH_KEY):
            parse_auths(text)
        return
    assert [(a.scheme, a.auth) for a in parse_auths(text)] == literal


# ---- digest_acl_id: DigestAuthenticationProvider.generateDigest ---------------------------------


def test_digest_acl_id_known_value() -> None:
    assert digest_acl_id("hdfs-zkfcs:secret") == make_digest_acl_credential("hdfs-zkfcs", "secret")


@given(
    user=st.text(st.characters(blacklist_characters=":", blacklist_categories=("Cs",))),
    password=st.text(st.characters(blacklist_categories=("Cs",))),
)
@example("hdfs-zkfcs", "secret")
@example("ü", "pässwörd:with:colons")
def test_digest_acl_id_is_kazoos_digest(user: str, password: str) -> None:
    assert digest_acl_id(f"{user}:{password}") == make_digest_acl_credential(user, password)


def test_digest_acl_id_makes_an_acl_that_parses() -> None:
    acl_id = digest_acl_id("hdfs-zkfcs:secret")
    assert parse_acls(f"digest:{acl_id}:rwcda") == (ZKAcl("digest", acl_id, 31),)


# ---- resolve_conf_indirection: ZKUtil.resolveConfIndirection ------------------------------------


class FakeFiles:
    """A read_file that serves a dict and records the paths it was asked for."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files
        self.asked: list[str] = []

    def __call__(self, path: str) -> str:
        self.asked.append(path)
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path]


def test_resolve_conf_indirection_reads_at_files() -> None:
    files = FakeFiles({"/etc/zk-auth": "  digest:hdfs-zkfcs:secret\n"})
    assert resolve_conf_indirection("@/etc/zk-auth", files) == "digest:hdfs-zkfcs:secret"
    assert files.asked == ["/etc/zk-auth"]


@pytest.mark.parametrize("value", [None, "", "world:anyone:rwcda", "digest:a@b:c", " @/x"])
def test_resolve_conf_indirection_passes_other_values_through(value: str | None) -> None:
    files = FakeFiles({})
    assert resolve_conf_indirection(value, files) == value
    assert files.asked == []


def test_resolve_conf_indirection_lets_the_readers_error_through() -> None:
    with pytest.raises(FileNotFoundError):
        resolve_conf_indirection("@/missing", FakeFiles({}))


def test_resolve_conf_indirection_trims_the_path_like_hadoop() -> None:
    files = FakeFiles({"/etc/zk-auth": "digest:hdfs-zkfcs:secret\n"})
    assert resolve_conf_indirection("@ /etc/zk-auth ", files) == "digest:hdfs-zkfcs:secret"
