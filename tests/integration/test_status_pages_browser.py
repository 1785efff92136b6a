"""The status pages in a real headless browser (Debian's chromium): a NameNode in this process
writing to three JournalNode processes. The pages render with no console error, refresh
without reloading, show a frozen (SIGSTOPped) JournalNode as lagging, and link from the
NameNode's page to a JournalNode's and back. A screenshot of each page is kept in the
test's tmp dir (``namenode.png``, ``namenode-lagging.png``, ``journalnode.png``).

One browser for the module (its start-up is most of the cost); ``.ci/run`` installs it.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hadoop_qjm.namenode.name_node import NameNode
from hadoop_qjm.namenode.name_node_core import format_namenode
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.testing.headless_browser import BrowserNotFound, HeadlessBrowser, Page
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from tests.integration.namenode_support import Terminations, nn_conf

pytestmark = pytest.mark.timeout(120)

JID = "pages"


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[HeadlessBrowser]:
    try:
        started = HeadlessBrowser(tmp_path_factory.mktemp("browser"))
    except BrowserNotFound as e:
        missing = str(e)  # failed outside the except: one line, no chained traceback
    else:
        missing = None
    if missing is not None:
        pytest.fail(missing, pytrace=False)
    with started:
        yield started


class Cluster:
    """Three JournalNode processes and an active NameNode in this process."""

    def __init__(self, base: Path) -> None:
        self.mjc = MiniJournalCluster(3, base / "jns", processes=True)
        try:
            conf = nn_conf(
                base,
                shared=self.mjc.quorum_journal_uri(JID),
                **{
                    "dfs.namenode.rpc-address": "127.0.0.1:0",
                    "dfs.namenode.http-address": "127.0.0.1:0",
                },
            )
            format_namenode(conf, fs_owner="hdfs")
            self.nn = NameNode(conf, terminate=Terminations(), fs_owner="hdfs")
            self.nn.start()
            self.proxy = NameNodeProxy(*self.nn.rpc_address, timeout_s=30)
        except BaseException:
            self.mjc.shutdown()
            raise
        self.url = f"http://127.0.0.1:{self.nn.http_address[1]}/"

    def close(self) -> None:
        try:
            self.proxy.close()
            self.nn.stop()
        finally:
            self.mjc.shutdown()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield c
    finally:
        c.close()


def cell(page: Page, row_selector: str, column: int) -> str:
    return page.evaluate(
        f"(document.querySelector({json.dumps(row_selector)})?.cells[{column}].textContent)"
    )


def overview(page: Page) -> dict[str, str]:
    return page.evaluate(
        "Object.fromEntries([...document.querySelectorAll('#overview-rows tr')]"
        ".map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent]))"
    )


def journal_node_row(cluster: Cluster, i: int) -> str:
    """A selector of JournalNode ``i``'s row on the NameNode's page."""
    return f"#journal-node-rows tr[data-node='127.0.0.1:{cluster.mjc.rpc_address(i)[1]}']"


def test_namenode_page_shows_a_frozen_journal_node_as_lagging(
    browser: HeadlessBrowser, cluster: Cluster, tmp_path: Path
) -> None:
    cluster.proxy.mkdirs("/a")
    page = browser.open(cluster.url + "?refresh=0.5")
    try:
        page.wait_for("document.querySelectorAll('#journal-node-rows tr.in-sync').length === 3")
        ns = cluster.nn.core.ns_info
        shown = overview(page)
        assert shown["State"] == "active" and shown["Cluster ID"] == ns.cluster_id
        assert shown["Namespace ID"] == str(ns.namespace_id)
        assert page.evaluate("document.getElementById('state').textContent") == "active"
        assert page.evaluate("document.querySelectorAll('#storage-rows tr').length") == 1
        assert "HA is not enabled" in page.evaluate(
            "document.getElementById('ha-summary').textContent"
        )

        # A refresh updates the tables in place: the page is not reloaded.
        page.evaluate("window.notReloaded = true")
        files = int(shown["Files and directories"])
        cluster.proxy.mkdirs("/b")
        page.wait_for(
            "[...document.querySelectorAll('#overview-rows tr')].some((tr) =>"
            f" tr.cells[0].textContent === 'Files and directories'"
            f" && tr.cells[1].textContent === '{files + 1}')"
        )
        assert page.evaluate("window.notReloaded") is True
        page.screenshot(tmp_path / "namenode.png")

        frozen = cluster.mjc.nodes[0]
        frozen.kill(signal.SIGSTOP)
        try:
            deadline = time.monotonic() + 30
            i = 0
            # Keep writing (a quorum of two still acknowledges) until the page shows node 0
            # behind for longer than the lagging threshold.
            while "lagging" not in page.evaluate(
                f"document.querySelector({json.dumps(journal_node_row(cluster, 0))}).className"
            ):
                assert time.monotonic() < deadline, "JournalNode 0 never shown as lagging"
                cluster.proxy.mkdirs(f"/while-frozen/{i}")
                i += 1
                time.sleep(0.1)
            assert cell(page, journal_node_row(cluster, 0), 1) == "lagging"
            assert int(cell(page, journal_node_row(cluster, 0), 3)) > 0  # lag in txns
            for j in (1, 2):
                assert cell(page, journal_node_row(cluster, j), 1) == "in sync"
            colour = page.evaluate(
                "getComputedStyle(document.querySelector("
                f"{json.dumps(journal_node_row(cluster, 0))})).backgroundColor"
            )
            assert colour == "rgb(255, 243, 205)"  # the stylesheet's --warn-bg
            page.screenshot(tmp_path / "namenode-lagging.png")
        finally:
            frozen.kill(signal.SIGCONT)
        page.evaluate("1")  # read the events that arrived meanwhile
        assert page.console_errors == []
    finally:
        page.close()
    assert (tmp_path / "namenode-lagging.png").stat().st_size > 0


def test_namenode_page_shows_the_rolling_upgrade(
    browser: HeadlessBrowser, cluster: Cluster
) -> None:
    """NameNodeInfo's RollingUpgradeStatus in Hadoop's dfshealth words (issue 36)."""
    row = (
        "[...document.querySelectorAll('#overview-rows tr')]"
        ".find((tr) => tr.cells[0].textContent === 'Rolling upgrade')?.cells[1].textContent"
    )
    page = browser.open(cluster.url + "?refresh=0.5")
    try:
        assert page.wait_for(row) == "none in progress"
        cluster.proxy.rolling_upgrade("PREPARE")  # no HA: the rollback image at once
        try:
            shown = page.wait_for(f"({row}).includes('Proceed') && ({row})")
            assert shown.startswith("Rolling upgrade started at ")
            assert shown.endswith("Rollback image has been created. Proceed to upgrade daemons.")
        finally:
            cluster.proxy.rolling_upgrade("FINALIZE")
        assert page.wait_for(f"({row}) === 'none in progress'")
        assert page.console_errors == []
    finally:
        page.close()


def test_journal_node_page_and_the_links_between_the_pages(
    browser: HeadlessBrowser, cluster: Cluster, tmp_path: Path
) -> None:
    for i in range(3):
        cluster.proxy.mkdirs(f"/d{i}")
    cluster.nn.roll_edit_log()  # a finalized segment as well as the open one
    page = browser.open(cluster.url)
    try:
        link = page.wait_for(
            f"document.querySelector({json.dumps(journal_node_row(cluster, 1) + ' a')})?.href"
        )
        assert link.startswith(
            f"http://127.0.0.1:{cluster.mjc.http_address(1)[1]}/journalnode.html"
        )
        page.navigate(link)
        page.wait_for(
            f"document.querySelector('#journal-rows tr')?.cells[0].textContent === '{JID}'"
        )
        row = page.evaluate(
            "[...document.querySelector('#journal-rows tr').cells].map((c) => c.textContent)"
        )
        written = cluster.nn.core.edit_log.stats().last_written_txid
        # Journal, Formatted, Promised epoch, Writer epoch, Last written txid, Committed txid
        assert row[:4] == [JID, "yes", "1", "1"]
        assert int(row[4]) == written and written - 1 <= int(row[5]) <= written
        assert row[7].startswith("edits_inprogress_")
        assert row[8].startswith("not running")  # no shared edits dir in the JNs' conf
        segments = page.evaluate(
            f"[...document.querySelectorAll('#segments-{JID} > table > tbody > tr')]"
            ".map((tr) => tr.cells[1].textContent)"
        )
        assert "finalized" in segments and segments[-1] == "in progress"
        # The journal's scrubber (bit rot), from its JournalNodeScrubber-<jid> bean.
        scrubber = page.evaluate(
            f"[...document.querySelectorAll('#scrubber-{JID} tbody tr')]"
            ".map((tr) => tr.cells[0].textContent)"
        )
        assert scrubber[:3] == ["State", "Segments / bytes scrubbed", "Corrupt found"]
        assert page.evaluate("document.getElementById('namenode-link').hidden") is False
        assert page.evaluate("document.getElementById('namenode-link').href") == cluster.url
        page.screenshot(tmp_path / "journalnode.png")

        page.evaluate("document.getElementById('namenode-link').click()")
        page.wait_for(f"location.href === {json.dumps(cluster.url)}")
        page.wait_for("document.querySelectorAll('#journal-node-rows tr').length === 3")

        # ?nn= that is not an http(s) URL makes no link (never a javascript: one).
        page.navigate(link.split("?")[0] + "?nn=javascript:alert(1)")
        page.wait_for("document.getElementById('updated').dataset.refreshes")
        assert page.evaluate("document.getElementById('namenode-link').hidden") is True
        assert page.console_errors == []
    finally:
        page.close()


def test_a_standby_and_journal_nodes_with_peers_show_what_is_true(
    browser: HeadlessBrowser, tmp_path: Path
) -> None:
    """Issue 33 items 2 and 12: on a standby's page each JournalNode is "not writing
    (standby)" with no txid (it was "in sync" at txid 0); a JournalNode whose syncer
    compared both peers' manifests says "in sync with 2 of 2 peers"."""
    from hadoop_qjm.conf import Configuration
    from hadoop_qjm.testing.in_process_ha import HAPair, ha_conf, wait_until

    conf = Configuration()
    conf.set("dfs.journalnode.sync.interval", "100")
    with MiniJournalCluster(3, base_dir=tmp_path / "jns", conf=conf) as mjc:
        mjc.share_edits(JID)
        pair = HAPair(ha_conf(tmp_path, mjc, JID), tmp_path)
        try:
            pair["nn1"].transition_to_active()
            with pair.proxy("nn1") as proxy:
                proxy.mkdirs("/s")
            pair["nn1"].roll_edit_log()  # a finalized segment for the syncers to compare
            wait_until(
                lambda: mjc.journal_node(0).syncer_status(JID)["CatchUp"].endswith("2 of 2 peers"),
                what="JournalNode 0's syncer to compare both peers",
            )
            page = browser.open(f"http://127.0.0.1:{pair['nn2'].http_address[1]}/")
            try:
                page.wait_for("document.querySelectorAll('#journal-node-rows tr').length === 3")
                rows = page.evaluate(
                    "[...document.querySelectorAll('#journal-node-rows tr')]"
                    ".map((tr) => [tr.cells[1].textContent, tr.cells[2].textContent])"
                )
                assert rows == [["not writing (standby)", "-"]] * 3
                page.navigate(f"http://127.0.0.1:{mjc.http_address(0)[1]}/journalnode.html")
                syncer = page.wait_for(
                    "document.querySelector('#journal-rows tr')?.cells[8].textContent"
                )
                assert syncer.startswith("running, in sync with 2 of 2 peers"), syncer
                assert page.console_errors == []
            finally:
                page.close()
        finally:
            pair.stop()


def test_an_observers_page_shows_its_lag_and_held_reads(
    browser: HeadlessBrowser, tmp_path: Path
) -> None:
    """Issue 37 item 7: an observer's overview has its lag behind the active and the reads it
    held for alignment (ObserverStatus); an active's has neither row."""
    from hadoop_qjm.testing.in_process_ha import HAPair, ha_conf

    with MiniJournalCluster(3, base_dir=tmp_path / "jns") as mjc:
        mjc.share_edits(JID)
        conf = ha_conf(tmp_path, mjc, JID, **{"dfs.namenode.state.context.enabled": "true"})
        pair = HAPair(conf, tmp_path)
        try:
            pair["nn1"].transition_to_active()
            with pair.proxy("nn2") as p2:
                p2.transition_to_observer()
            page = browser.open(f"http://127.0.0.1:{pair['nn2'].http_address[1]}/")
            try:
                page.wait_for("document.querySelectorAll('#overview-rows tr').length > 3")
                rows = overview(page)
                assert rows["State"] == "observer"
                assert rows["Lag behind the active (txns)"] == "0"
                assert rows["Reads held for alignment"] == "0 (0 ms in all, 0 now)"
                assert int(rows["Since edits last loaded (ms)"]) >= 0
                page.navigate(f"http://127.0.0.1:{pair['nn1'].http_address[1]}/")
                page.wait_for("document.querySelectorAll('#overview-rows tr').length > 3")
                assert "Lag behind the active (txns)" not in overview(page)
                assert page.console_errors == []
            finally:
                page.close()
        finally:
            pair.stop()
