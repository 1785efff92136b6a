/* The NameNode's status page: reads /jmx (as Hadoop's dfshealth.js) and fills the tables. */
"use strict";

(() => {
  const { jmx, el, fillRows, kvRows, setText, fmtTime, fmtBytes, safeUrl } = qjm;
  const SERVICE = "Hadoop:service=NameNode,name=";
  const STATE_CLASS = { "in sync": "in-sync", lagging: "lagging", "out of sync": "out-of-sync" };

  function parsed(text, otherwise) {
    try {
      return typeof text === "string" ? JSON.parse(text) : text ?? otherwise;
    } catch (e) {
      return otherwise;
    }
  }

  /** A link to a JournalNode's page that links back here. */
  function journalNodeLink(label, base) {
    const url = safeUrl(base);
    if (url === null) {
      return label;
    }
    url.pathname = "/journalnode.html";
    url.search = "?nn=" + encodeURIComponent(location.origin + location.pathname);
    return el("a", { href: url.href, title: "this JournalNode's status page" }, label);
  }

  /** An observer's rows (ObserverStatus): its lag and the reads it held for alignment. */
  function observerRows(observer) {
    if (!observer || observer.State !== "observer") {
      return [];
    }
    return [
      ["Lag behind the active (txns)", observer.LagTxns],
      ["Since edits last loaded (ms)", observer.MillisSinceLastLoadedEdits],
      ["Reads held for alignment", observer.AlignmentHeldCallsNumOps + " (" +
        observer.AlignmentHeldCallsTotalTimeMillis + " ms in all, " +
        observer.AlignmentHeldCallsNow + " now)"],
    ];
  }

  function renderOverview(info, status, fsn, activity, observer) {
    setText("host-and-port", "'" + status.HostAndPort + "'");
    const state = document.getElementById("state");
    state.textContent = status.State;
    state.className = "badge " + status.State;
    fillRows("overview-rows", kvRows([
      ["State", status.State],
      ["Cluster ID", info.ClusterId || "-"],
      ["Namespace ID", info.NamespaceId || "-"],
      ["Block Pool ID", info.BlockPoolId || "-"],
      ["Started", fmtTime(info.NNStartedTimeInMillis)],
      ["Version", info.Version],
      ["Files and directories", fsn.FilesTotal],
      ["Last written txid", fsn.LastWrittenTransactionId],
      ["Synced txid", fsn.LastSyncedTransactionId],
      ["Transactions / syncs", activity.TransactionsNumOps + " / " + activity.SyncsNumOps],
      ["Txns per sync", Number(activity.TransactionsPerSync).toFixed(2)],
      ["Last checkpoint txid", fsn.MostRecentCheckpointTxId],
      ["Transactions since last checkpoint", fsn.TransactionsSinceLastCheckpoint],
      ["Last HA transition", fmtTime(status.LastHATransitionTime)],
      ["Rolling upgrade", rollingUpgrade(info.RollingUpgradeStatus)],
      ...observerRows(observer),
    ]));
  }

  /** Hadoop's dfshealth.html words for NameNodeInfo's RollingUpgradeStatus. */
  function rollingUpgrade(ru) {
    if (!ru) {
      return "none in progress";
    }
    if (ru.finalizeTime > 0) {
      return "Rolling upgrade finalized at " + fmtTime(ru.finalizeTime) + ".";
    }
    return "Rolling upgrade started at " + fmtTime(ru.startTime) + ". " + (ru.createdRollbackImages
      ? "Rollback image has been created. Proceed to upgrade daemons."
      : "Rollback image has not been created.");
  }

  function renderJournals(info, channels) {
    const txns = parsed(info.JournalTransactionInfo, {});
    setText("current-txid", txns.LastAppliedOrWrittenTxId ?? "-");
    const journals = parsed(info.NameJournalStatus, []);
    fillRows("journal-rows", journals.map((j) => {
      const flags = [j.required === "true" ? "required" : "optional"];
      if (j.disabled === "true") {
        flags.push("disabled");
      }
      return el("tr", { className: j.disabled === "true" ? "failed" : "" },
        el("td", {}, j.manager, el("br"), el("span", { className: "muted" }, flags.join(", "))),
        el("td", { className: "state" }, el("pre", {}, j.stream)));
    }));
    fillRows("journal-node-rows", channels.map((c) => {
      // A NameNode not writing (a standby) has acknowledged nothing: no numbers to show.
      const writing = !String(c.SyncState).startsWith("not writing");
      const num = (value) => el("td", { className: "num" }, writing ? value : "-");
      return el(
        "tr",
        { className: STATE_CLASS[c.SyncState] || "", title: c.name, dataset: { node: c.RemoteAddress } },
        el("td", {}, journalNodeLink(c.RemoteAddress, c.HttpServerURI)),
        el("td", { className: "state" }, c.SyncState),
        num(c.HighestAckedTxId),
        num(c.CurrentLagTxns),
        num(c.LagTimeMillis),
        num(fmtBytes(c.QueuedEditsSize)),
      );
    }));
  }

  function renderStorage(info) {
    const dirs = parsed(info.NameDirStatuses, { active: {}, failed: {} });
    const rows = [];
    for (const [state, entries] of [["Active", dirs.active || {}], ["Failed", dirs.failed || {}]]) {
      for (const [dir, type] of Object.entries(entries)) {
        rows.push(el("tr", { className: state === "Failed" ? "failed" : "" },
          el("td", {}, dir), el("td", {}, type), el("td", { className: "state" }, state)));
      }
    }
    fillRows("storage-rows", rows);
  }

  function renderHa(status) {
    const peers = status.HAPeers || [];
    document.getElementById("ha-table").hidden = !status.NamenodeId;
    if (!status.NamenodeId) {
      setText("ha-summary", "HA is not enabled: this is the nameservice's only NameNode.");
      return;
    }
    setText("ha-summary", "Nameservice " + status.Nameservice + ", this NameNode is "
      + status.NamenodeId + ".");
    const self = el("tr", {}, el("td", {}, status.NamenodeId + " (this one)"),
      el("td", {}, location.host), el("td", {}, status.State), el("td", {}, "now"));
    fillRows("ha-rows", [self, ...peers.map((p) => {
      const url = safeUrl(p.HttpAddress);
      const address = url === null ? (p.HttpAddress || "-")
        : el("a", { href: url.href, title: "its status page" }, url.host);
      return el("tr", { className: p.State === "unreachable" ? "failed" : "" },
        el("td", {}, p.NamenodeId), el("td", {}, address),
        el("td", { className: "state", title: p.Error || "" }, p.State),
        el("td", {}, fmtTime(p.LastContactTime)));
    })]);
  }

  async function load() {
    const beans = {};
    const channels = [];
    for (const bean of await jmx("Hadoop:service=NameNode,*")) {
      beans[bean.name] = bean;
      if (bean.modelerType === "IPCLoggerChannel") {
        channels.push(bean);
      }
    }
    const info = beans[SERVICE + "NameNodeInfo"];
    const status = beans[SERVICE + "NameNodeStatus"];
    renderOverview(info, status, beans[SERVICE + "FSNamesystem"], beans[SERVICE + "NameNodeActivity"],
      beans[SERVICE + "ObserverStatus"]);
    renderJournals(info, channels);
    renderStorage(info);
    renderHa(status);
    document.title = "NameNode " + status.HostAndPort + " (" + status.State + ")";
  }

  qjm.refreshEvery(load);
})();
