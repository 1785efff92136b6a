"""The NameNode's resource check: the pure policy (NameNodeResourcePolicy, checked against
a literal reading with hypothesis) and the checker over fake ``statvfs`` / device calls."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.name_node_resource_checker import NameNodeResourceChecker
from hadoop_qjm.namenode.name_node_resource_policy import (
    CheckedVolume,
    are_resources_available,
    check_volumes,
    group_by_volume,
)
from hadoop_qjm.namenode.nn_storage import NameNodeDirs

pytestmark = pytest.mark.timeout(120)

MIB = 1024 * 1024


def vol(name: str, free: int, required: bool = False) -> CheckedVolume:
    return CheckedVolume((name,), free, required)


@pytest.mark.parametrize(
    ("volumes", "minimum", "available", "short"),
    [
        ([], 1, True, []),  # nothing to check (Hadoop's start-up workaround)
        ([vol("/a", 200 * MIB)], 1, True, []),
        ([vol("/a", 99 * MIB)], 1, False, ["/a"]),
        ([vol("/a", 100 * MIB)], 1, True, []),  # exactly the reserve is enough
        # One redundant volume with room is enough by default, two when asked for.
        ([vol("/a", 0), vol("/b", 200 * MIB)], 1, True, ["/a"]),
        ([vol("/a", 0), vol("/b", 200 * MIB)], 2, False, ["/a"]),
        # A required volume without room is unavailable whatever the others have.
        ([vol("/r", 1, True), vol("/b", 200 * MIB)], 1, False, ["/r"]),
        ([vol("/r", 200 * MIB, True), vol("/b", 0)], 0, True, ["/b"]),
        ([vol("/r", 200 * MIB, True)], 5, True, []),  # no redundant volume: minimum unused
        # Every volume has room, but fewer redundant ones exist than the minimum.
        ([vol("/a", 200 * MIB)], 2, False, []),
    ],
)
def test_check_volumes(volumes, minimum, available, short) -> None:
    verdict = check_volumes(volumes, 100 * MIB, minimum)
    assert verdict.available is available
    assert [v.name for v in verdict.short] == short
    if available:
        assert verdict.reason is None
    else:
        assert verdict.reason and "\n" not in verdict.reason


def test_the_reason_names_each_short_volume() -> None:
    verdict = check_volumes([CheckedVolume(("/n", "/e"), 7, False)], 100, 1)
    assert verdict.reason == (
        "/n, /e has 7 bytes available, less than dfs.namenode.resource.du.reserved = 100"
    )
    verdict = check_volumes([vol("/a", 200)], 100, 3)
    assert verdict.reason == (
        "1 redundant volumes, fewer than dfs.namenode.resource.checked.volumes.minimum = 3"
    )


def naive_available(resources: list[tuple[bool, bool]], minimum: int) -> bool:
    """NameNodeResourcePolicy read literally."""
    required = [ok for req, ok in resources if req]
    redundant = [ok for req, ok in resources if not req]
    if not all(required):
        return False
    if not redundant:
        return len(required) > 0
    return sum(redundant) >= minimum


@given(st.lists(st.tuples(st.booleans(), st.booleans()), max_size=8), st.integers(0, 5))
def test_are_resources_available_matches_a_literal_reading(resources, minimum) -> None:
    assert are_resources_available(resources, minimum) is naive_available(resources, minimum)


@given(st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 2), st.booleans()), max_size=8))
def test_group_by_volume_matches_a_literal_reading(entries) -> None:
    devices = list(dict.fromkeys(device for _, device, _ in entries))
    expected = [
        (
            tuple(dict.fromkeys(d for d, dev, _ in entries if dev == device)),
            any(req for _, dev, req in entries if dev == device),
        )
        for device in devices
    ]
    assert group_by_volume(entries) == expected


def test_group_by_volume_marks_a_volume_required_if_any_directory_is() -> None:
    grouped = group_by_volume(
        [("/n1", 1, False), ("/e1", 1, True), ("/n2", 2, False), ("/n1", 1, False)]
    )
    assert grouped == [(("/n1", "/e1"), True), (("/n2",), False)]


# ---- the checker, at the edge ------------------------------------------------------------------
def statvfs_of(free: dict[str, int]):
    def statvfs(path: str):
        if path not in free:
            raise FileNotFoundError(path)
        return SimpleNamespace(f_bavail=free[path] // 4096, f_frsize=4096)

    return statvfs


def dirs_conf(name: str, edits: str | None = None, required: str | None = None) -> Configuration:
    conf = Configuration()
    conf.set("dfs.namenode.name.dir", name)
    if edits is not None:
        conf.set("dfs.namenode.edits.dir", edits)
    if required is not None:
        conf.set("dfs.namenode.edits.dir.required", required)
    return conf


def checker(conf: Configuration, devices: dict[str, int], free: dict[str, int]):
    return NameNodeResourceChecker(
        conf,
        NameNodeDirs.from_conf(conf),
        statvfs=statvfs_of(free),
        device_of=lambda path: devices[path],
    )


def test_checker_one_volume_for_name_and_edits_on_one_device() -> None:
    conf = dirs_conf("/data/name", "/data/name,/data/edits")
    c = checker(conf, {"/data/name": 1, "/data/edits": 1}, {"/data/name": 200 * MIB})
    assert c.volumes == [(("/data/name", "/data/edits"), False)]
    assert c.check().available
    conf.set("dfs.namenode.resource.du.reserved", "300m")
    verdict = checker(conf, {"/data/name": 1, "/data/edits": 1}, {"/data/name": 200 * MIB}).check()
    assert not verdict.available
    assert verdict.reason.startswith("/data/name, /data/edits has 209715200 bytes available")


def test_checker_required_edits_dir_and_a_vanished_directory() -> None:
    conf = dirs_conf("/n", "/n,/e", required="/e")
    devices = {"/n": 1, "/e": 2}
    assert checker(conf, devices, {"/n": 200 * MIB, "/e": 200 * MIB}).check().available
    # The required volume vanished: statvfs fails, it counts as no space.
    verdict = checker(conf, devices, {"/n": 200 * MIB}).check()
    assert not verdict.available and [v.name for v in verdict.short] == ["/e"]
    # A full redundant volume is fine while another redundant one has room ... but with
    # only one redundant volume left it is not.
    conf = dirs_conf("/n", "/n,/e")
    assert checker(conf, devices, {"/n": 0, "/e": 200 * MIB}).check().available
    conf.set("dfs.namenode.resource.checked.volumes.minimum", "2")
    assert not checker(conf, devices, {"/n": 0, "/e": 200 * MIB}).check().available


def test_checker_on_real_directories(tmp_path) -> None:
    conf = dirs_conf(str(tmp_path / "name"))
    (tmp_path / "name").mkdir()
    c = NameNodeResourceChecker(conf, NameNodeDirs.from_conf(conf))
    assert c.check().available  # a test machine has 100 MiB free
    conf.set("dfs.namenode.resource.du.reserved", str(1 << 60))
    verdict = NameNodeResourceChecker(conf, NameNodeDirs.from_conf(conf)).check()
    assert not verdict.available and str(tmp_path / "name") in verdict.reason
