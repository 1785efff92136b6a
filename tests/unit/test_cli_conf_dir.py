"""``hdfs-py --config DIR``: a DIR that is not a directory is one sentence saying whether it
is missing or not a directory, for every command and for ``--daemon`` (a regular file was
read as ``<file>/log4j.properties`` and reported as "[Errno 20] Not a directory")."""

from __future__ import annotations

from pathlib import Path

import pytest

from hadoop_qjm.cli import main

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    "command", [["getconf", "-confKey", "fs.defaultFS"], ["--daemon", "status", "journalnode"]]
)
@pytest.mark.parametrize("kind", ["file", "missing", "under a file"])
def test_a_config_dir_that_is_not_one_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture, kind: str, command: list[str]
) -> None:
    a_file = tmp_path / "hdfs-site.xml"
    a_file.write_text("<configuration/>")
    conf_dir = {"file": a_file, "missing": tmp_path / "nope", "under a file": a_file / "x"}[kind]
    assert main(["--config", str(conf_dir), *command]) == 2
    err = capsys.readouterr().err.strip()
    why = "is not a directory" if kind == "file" else "does not exist"
    assert err == f"hdfs-py: configuration directory {conf_dir} {why}"
    assert sorted(tmp_path.iterdir()) == [a_file]
