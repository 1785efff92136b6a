"""``bench qjm`` measures with the configuration it is given (``--config``, ``-D``), in a
directory of its own that it names and removes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.tools.bench import _qjm_measure as qjm_measure
from hadoop_qjm.tools.bench import qjm as bench

pytestmark = pytest.mark.timeout(30)

TIMEOUT_KEY = keys.DFS_QJOURNAL_WRITE_TXNS_TIMEOUT_KEY


class _Stop(Exception):
    """Raised by the recording writer once every cluster of the run has been asked for."""


def test_the_command_line_configuration_reaches_both_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: dict[str, Configuration] = {}

    def interleaved(*args, conf, **kwargs):
        seen["default"] = conf
        return []

    def secure(*args):
        seen["secure"] = args[-1]
        return 0

    monkeypatch.setattr(bench, "run_interleaved", interleaved)
    monkeypatch.setattr(bench, "report", lambda *args: None)
    monkeypatch.setattr(bench, "run_secure", secure)
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "hdfs-site.xml").write_text(
        "<configuration><property><name>dfs.qjournal.queued-edits.limit.mb</name>"
        "<value>7</value></property></configuration>"
    )
    opts = ["--config", str(conf_dir), "-D", f"{TIMEOUT_KEY}=12345", "bench", "qjm"]
    assert main([*opts, "--skip-ideal", "--dir", str(tmp_path)]) == 0
    assert main([*opts, "--secure"]) == 0
    for conf in seen.values():
        assert conf.get(TIMEOUT_KEY) == "12345"
        assert conf.get("dfs.qjournal.queued-edits.limit.mb") == "7"
    assert sorted(seen) == ["default", "secure"]


def test_every_cluster_of_the_default_run_gets_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clusters: list[tuple[str, int, Configuration]] = []

    class RecordingWriter:
        def __init__(self, stack, base: Path, num_nodes: int, conf: Configuration) -> None:
            clusters.append((base.name, num_nodes, conf))
            if len(clusters) == 3:
                raise _Stop

    monkeypatch.setattr(qjm_measure, "Writer", RecordingWriter)
    conf = Configuration()
    conf.set(TIMEOUT_KEY, "12345")
    with pytest.raises(_Stop):
        bench.run_interleaved(
            tmp_path, [1], 0.1, 0.1, 10, ideal=None, five=True, frozen=False,
            busy_poll_us=300, conf=conf,
        )  # fmt: skip
    assert [(name, n) for name, n, _ in clusters] == [
        ("three", 3),
        ("five", 5),
        ("three-busy-poll", 3),
    ]
    assert all(c.get(TIMEOUT_KEY) == "12345" for _, _, c in clusters)
    busy = clusters[2][2]
    assert busy.get(keys.DFS_QJOURNAL_BUSY_POLL_KEY) == "300"
    assert conf.get(keys.DFS_QJOURNAL_BUSY_POLL_KEY) != "300"  # set on a copy only


def test_the_secure_run_sets_tls_on_top_of_it(tmp_path: Path) -> None:
    conf = Configuration()
    conf.set(TIMEOUT_KEY, "12345")
    tls = bench.secure_conf(tmp_path / "pki", conf)
    assert tls.get(TIMEOUT_KEY) == "12345"
    assert tls.get(keys.HADOOP_RPC_PROTECTION_KEY) == "privacy"
    assert conf.get(keys.HADOOP_RPC_PROTECTION_KEY) != "privacy"  # set on a copy only


def test_each_run_names_its_directory_and_the_load_and_removes_the_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    bases: list[Path] = []

    def measured(base, *args, **kwargs):
        bases.append(base)
        assert base.parent == tmp_path and base.name.startswith("bench-qjm-")
        return []

    monkeypatch.setattr(bench, "run_interleaved", measured)
    monkeypatch.setattr(bench, "report", lambda *args: None)
    monkeypatch.setattr(bench, "run_pipelined", measured)
    monkeypatch.setattr(bench, "report_pipelined", lambda *args: None)
    for mode in ([], ["--pipeline"]):
        assert main(["bench", "qjm", "--skip-ideal", "--dir", str(tmp_path), *mode]) == 0
        lines = capsys.readouterr().out.splitlines()
        machine = f"directory: {bases[-1]}; {os.cpu_count()} CPUs, load average "
        assert sum(line.startswith(machine) for line in lines) == 1, lines
        assert lines[-1].startswith("load average at the end: "), lines
        assert list(tmp_path.iterdir()) == []

    def failed(base, *args, **kwargs):
        bases.append(base)
        raise RuntimeError("a phase failed")

    monkeypatch.setattr(bench, "run_interleaved", failed)
    assert main(["bench", "qjm", "--skip-ideal", "--dir", str(tmp_path)]) == 1
    assert "load average at the end" not in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []  # removed also when the run failed
