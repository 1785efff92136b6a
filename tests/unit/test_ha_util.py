"""ha_util: which nameservice and NameNode a process is, and its generic keys."""

from __future__ import annotations

import socket

import pytest

from hadoop_qjm.common.exceptions import AccessControlException, ConfigurationError
from hadoop_qjm.conf import Configuration
from hadoop_qjm.ha.ha_service_protocol import HARequestSource
from hadoop_qjm.namenode.ha.ha_state_change import (
    HAStateChangeVerdict,
    check_ha_state_change,
    refuse_zkfc_standby_of_an_observer,
)
from hadoop_qjm.namenode.ha.ha_util import (
    get_namenode_id,
    get_namenode_ids,
    get_nameservice_id,
    ha_namenodes,
    initialize_generic_keys,
    is_ha_enabled,
    resolve_ha_conf,
    suffixed,
)

pytestmark = pytest.mark.timeout(30)

NS = "mycluster"


def _non_local_addresses() -> list[str]:
    """Documentation addresses (RFC 5737) this machine cannot bind: not its own."""
    found = []
    for candidate in ("203.0.113.7", "198.51.100.7", "192.0.2.77", "203.0.113.8"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.bind((candidate, 0))
            except OSError:
                found.append(candidate)
    return found


REMOTE, REMOTE2 = _non_local_addresses()[:2]


def ha(nn1: str = "127.0.0.1:8020", nn2: str = f"{REMOTE}:8020", **extra: str) -> Configuration:
    conf = Configuration()
    conf.set("dfs.nameservices", NS)
    conf.set(f"dfs.ha.namenodes.{NS}", "nn1, nn2")
    conf.set(f"dfs.namenode.rpc-address.{NS}.nn1", nn1)
    conf.set(f"dfs.namenode.rpc-address.{NS}.nn2", nn2)
    for key, value in extra.items():
        conf.set(key, value)
    return conf


def test_suffixed_skips_empty_suffixes() -> None:
    assert suffixed("dfs.namenode.rpc-address", NS, "nn1") == f"dfs.namenode.rpc-address.{NS}.nn1"
    assert suffixed("dfs.namenode.rpc-address", None, "") == "dfs.namenode.rpc-address"


def test_nameservice_resolution() -> None:
    assert get_nameservice_id(Configuration()) is None
    assert get_nameservice_id(ha()) == NS
    # The explicit id wins; the internal list is preferred to dfs.nameservices.
    explicit = ha(**{"dfs.nameservice.id": "other"})
    assert get_nameservice_id(explicit) == "other"
    internal = ha(**{"dfs.nameservices": f"{NS},remote", "dfs.internal.nameservices": NS})
    assert get_nameservice_id(internal) == NS


def test_multiple_nameservices_need_an_explicit_id() -> None:
    conf = ha(**{"dfs.nameservices": f"{NS},other"})
    with pytest.raises(ConfigurationError, match="multiple nameservices.*dfs.nameservice.id"):
        get_nameservice_id(conf)
    conf.set("dfs.nameservice.id", NS)
    assert get_nameservice_id(conf) == NS


def test_namenode_ids_and_ha_enabled() -> None:
    conf = ha()
    assert get_namenode_ids(conf, NS) == ["nn1", "nn2"]
    assert get_namenode_ids(conf, None) == []
    assert is_ha_enabled(conf) and is_ha_enabled(conf, NS)
    conf.set(f"dfs.ha.namenodes.{NS}", "nn1")
    assert not is_ha_enabled(conf)
    assert not is_ha_enabled(Configuration())


def test_ha_namenodes_addresses() -> None:
    conf = ha(nn1="0.0.0.0:8020", **{f"dfs.namenode.http-address.{NS}.nn1": "0.0.0.0:9870"})
    nn1, nn2 = ha_namenodes(conf)
    assert (nn1.nnid, nn1.rpc, nn1.client_rpc) == ("nn1", ("0.0.0.0", 8020), ("127.0.0.1", 8020))
    assert nn1.client_http == ("127.0.0.1", 9870)
    assert nn2.http is None and nn2.client_http is None and nn2.rpc_text == f"{REMOTE}:8020"
    conf.unset(f"dfs.namenode.rpc-address.{NS}.nn2")
    with pytest.raises(ConfigurationError, match=f"dfs.namenode.rpc-address.{NS}.nn2"):
        ha_namenodes(conf)


def test_namenode_id_explicit_configured_or_by_local_address() -> None:
    conf = ha()
    assert get_namenode_id(conf, NS, "nn2") == "nn2"
    with pytest.raises(ConfigurationError, match="nn3 is not one of.*nn1, nn2"):
        get_namenode_id(conf, NS, "nn3")
    conf.set("dfs.ha.namenode.id", "nn2")
    assert get_namenode_id(conf, NS) == "nn2"
    # No id given: the one whose RPC address is an address of this machine.
    assert get_namenode_id(ha(), NS) == "nn1"
    assert get_namenode_id(ha(nn1=f"{REMOTE}:8020", nn2="localhost:8021"), NS) == "nn2"
    with pytest.raises(ConfigurationError, match="multiple addresses.*nn1, nn2"):
        get_namenode_id(ha(nn2="127.0.0.1:8021"), NS)
    with pytest.raises(ConfigurationError, match="no addresses that match"):
        get_namenode_id(ha(nn1=f"{REMOTE}:8020", nn2=f"{REMOTE2}:8020"), NS)


def test_generic_keys_are_copied_and_default_fs_names_the_nameservice() -> None:
    conf = ha(
        **{
            f"dfs.namenode.http-address.{NS}.nn2": "0.0.0.0:9871",
            f"dfs.namenode.name.dir.{NS}.nn2": "/data/nn2",
            f"dfs.namenode.shared.edits.dir.{NS}": "qjournal://jn1:8485;jn2:8485/mycluster",
            f"dfs.ha.automatic-failover.enabled.{NS}": "false",
            "dfs.namenode.name.dir": "/data/default",
        }
    )
    mine = initialize_generic_keys(conf, NS, "nn2")
    assert mine.get("dfs.namenode.rpc-address") == f"{REMOTE}:8020"
    assert mine.get("dfs.namenode.http-address") == "0.0.0.0:9871"
    assert mine.get("dfs.namenode.name.dir") == "/data/nn2"
    assert mine.get("dfs.namenode.shared.edits.dir") == "qjournal://jn1:8485;jn2:8485/mycluster"
    assert mine.get("dfs.ha.automatic-failover.enabled") == "false"
    assert mine.get("dfs.nameservice.id") == NS and mine.get("dfs.ha.namenode.id") == "nn2"
    assert mine.get("fs.defaultFS") == f"hdfs://{NS}"
    # The original is untouched.
    assert conf.get("dfs.namenode.name.dir") == "/data/default"


def test_resolve_ha_conf() -> None:
    plain = Configuration()
    plain.set("dfs.namenode.name.dir", "/data")
    assert resolve_ha_conf(plain) == (plain, None, None)
    with pytest.raises(ConfigurationError, match="-nnid nn1 given but HA is not configured"):
        resolve_ha_conf(plain, "nn1")
    conf, ns, nnid = resolve_ha_conf(ha(), "nn2")
    assert (ns, nnid) == (NS, "nn2")
    assert conf.get("dfs.namenode.rpc-address") == f"{REMOTE}:8020"
    with pytest.raises(ConfigurationError, match="not one of"):
        resolve_ha_conf(ha(), "nn9")
    _, _, local = resolve_ha_conf(ha())
    assert local == "nn1"


@pytest.mark.parametrize(
    ("source", "automatic", "verdict"),
    [
        (HARequestSource.REQUEST_BY_USER, False, HAStateChangeVerdict.ALLOWED),
        (HARequestSource.REQUEST_BY_USER, True, HAStateChangeVerdict.MANUAL_DISALLOWED),
        (HARequestSource.REQUEST_BY_USER_FORCED, False, HAStateChangeVerdict.ALLOWED),
        (HARequestSource.REQUEST_BY_USER_FORCED, True, HAStateChangeVerdict.ALLOWED_FORCED),
        (HARequestSource.REQUEST_BY_ZKFC, False, HAStateChangeVerdict.ZKFC_DENIED),
        (HARequestSource.REQUEST_BY_ZKFC, True, HAStateChangeVerdict.ALLOWED),
    ],
)
def test_check_ha_state_change_is_namenodes_check_ha_state_change(source, automatic, verdict):
    """NameNode.checkHaStateChange: with automatic failover the controllers own the state
    (a forced manual request passes, with a warning); without it a controller is refused."""
    assert check_ha_state_change(source, automatic) is verdict


def test_a_zkfc_cannot_make_an_observer_standby() -> None:
    """HDFS-14961: the controller's transitionToStandby on an observer is refused in
    Hadoop's words; a user's (haadmin -transitionToStandby) and any on a standby pass."""
    with pytest.raises(AccessControlException) as e:
        refuse_zkfc_standby_of_an_observer(HARequestSource.REQUEST_BY_ZKFC, True, "10.0.0.9")
    assert str(e.value) == (
        "Request from ZK failover controller at 10.0.0.9 denied since the namenode is in "
        "Observer state."
    )
    refuse_zkfc_standby_of_an_observer(HARequestSource.REQUEST_BY_USER, True, "10.0.0.9")
    refuse_zkfc_standby_of_an_observer(HARequestSource.REQUEST_BY_USER_FORCED, True, "x")
    refuse_zkfc_standby_of_an_observer(HARequestSource.REQUEST_BY_ZKFC, False, "10.0.0.9")
