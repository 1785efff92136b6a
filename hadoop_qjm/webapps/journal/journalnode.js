/* The JournalNode's status page: reads /jmx (as Hadoop's jn.js) and fills the tables. */
"use strict";

(() => {
  const { jmx, el, fillRows, kvRows, setText, fmtTime, fmtBytes, safeUrl } = qjm;
  const INFO = "Hadoop:service=JournalNode,name=JournalNodeInfo";

  /** The NameNode page that linked here (?nn=URL), shown as a link back. */
  function showNameNodeLink() {
    const url = safeUrl(new URLSearchParams(location.search).get("nn"));
    if (url !== null) {
      const link = document.getElementById("namenode-link");
      link.href = url.href;
      link.textContent = "\u2190 NameNode " + url.host;
      link.hidden = false;
    }
  }

  function syncerText(syncer) {
    if (!syncer) {
      return "-";
    }
    let text = syncer.State;
    if (syncer.CatchUp) {
      text += ", " + syncer.CatchUp;
      if (syncer.CatchUp === "syncing") {
        if (syncer.SegmentsBehind === null || syncer.SegmentsBehind === undefined) {
          text += " (no round yet)";
        } else if (syncer.PeersAnswered === 0) {
          text += " (no peer answered)";
        } else {
          text += " (" + syncer.SegmentsBehind + " segments, " + syncer.TxnsBehind + " txns behind)";
        }
      }
      if ((syncer.Unreachable || []).length > 0) {
        // "in sync with N of M peers": not enough to replace another JournalNode.
        text += "; no answer from " + syncer.Unreachable.join(", ");
      }
      if (syncer.FormatRefusal) {
        text += ": " + syncer.FormatRefusal;
      }
    }
    if (syncer.LastRoundTime > 0) {
      text += ", last round " + fmtTime(syncer.LastRoundTime);
    }
    if (syncer.LastError && !(syncer.Unreachable || []).length) {
      text += ", failed: " + syncer.LastError;
    }
    return text;
  }

  /** The journal's scrubber (bit rot): its state and counters, findings, files moved aside. */
  function scrubberSection(j, scrubber) {
    if (!scrubber) {
      return el("p", { className: "muted" }, "Scrubber: not running");
    }
    const state = scrubber.State + (scrubber.Current ? " (" + scrubber.Current + ")" : "");
    const rows = kvRows([
      ["State", state],
      ["Segments / bytes scrubbed", scrubber.SegmentsScrubbed + " / " + fmtBytes(scrubber.BytesScrubbed)],
      ["Corrupt found", scrubber.CorruptSegments],
      ["Repaired", scrubber.RepairedSegments],
      ["Unrepairable", scrubber.UnrepairableSegments],
      ["Last full pass", scrubber.LastFullPassTime > 0 ? fmtTime(scrubber.LastFullPassTime) : "none yet"],
      ["Rate limit", fmtBytes(scrubber.BytesPerSecondLimit) + "/s"],
      ["Moved aside", (scrubber.MovedAside || []).join(", ") || "none"],
    ]);
    const findings = (scrubber.Findings || []).map((f) => el("li", {}, f));
    return el("div", { id: "scrubber-" + j.JournalId,
      className: scrubber.UnrepairableSegments > 0 ? "scrubber bad" : "scrubber" },
      el("h3", {}, "Scrubber"),
      el("table", { className: "kv" }, el("tbody", {}, ...rows)),
      el("ul", {}, ...findings));
  }

  function segmentsSection(j, scrubber) {
    const rows = (j.Segments || []).map((s) => el("tr", {},
      el("td", {}, s.Name), el("td", {}, s.State), el("td", { className: "num" }, fmtBytes(s.Bytes))));
    const shown = rows.length < j.SegmentCount ? ", newest " + rows.length + " shown" : "";
    return el("div", { id: "segments-" + j.JournalId },
      el("h2", {}, "Journal " + j.JournalId + ": segments (" + j.SegmentCount + shown + ")"),
      el("table", {},
        el("thead", {}, el("tr", {}, el("th", {}, "File"), el("th", {}, "State"), el("th", {}, "Size"))),
        el("tbody", {}, ...rows)),
      scrubberSection(j, scrubber));
  }

  async function load() {
    const beans = await jmx("Hadoop:service=JournalNode,*");
    const info = beans.find((b) => b.name === INFO);
    const journals = beans.filter((b) => b.modelerType.startsWith("Journal-"))
      .map((b) => ({ ...b, JournalId: b["tag.JournalId"] }))
      .sort((a, b) => (a.JournalId < b.JournalId ? -1 : 1));
    setText("host-and-port", "'" + info.HostAndPort + "'");
    fillRows("overview-rows", kvRows([
      ["RPC address", info.HostAndPort],
      ["Started", fmtTime(info.JNStartedTimeInMillis)],
      ["Version", info.Version],
      ["Cluster IDs", (info.ClusterIds || []).join(", ") || "-"],
      ["Storage", (info.StorageInfos || []).join(" ") || "-"],
    ]));
    fillRows("journal-rows", journals.map((j) => el(
      "tr",
      { className: j.CurrentLagTxns > 0 ? "lagging" : "" },
      el("td", {}, el("a", { href: "#segments-" + j.JournalId }, j.JournalId)),
      el("td", {}, j.Formatted ? "yes" : "no"),
      el("td", { className: "num" }, j.LastPromisedEpoch),
      el("td", { className: "num" }, j.LastWriterEpoch),
      el("td", { className: "num" }, j.LastWrittenTxId),
      el("td", { className: "num" }, j.CommittedTxId),
      el("td", { className: "num state" }, j.CurrentLagTxns),
      el("td", {}, j.OpenSegment || "none"),
      el("td", {}, syncerText(j.Syncer)),
    )));
    const loaded = new Set(journals.map((j) => j.JournalId));
    let onDisk = {};
    try {
      onDisk = JSON.parse(info.JournalsStatus || "{}");
    } catch (e) {
      onDisk = {};
    }
    const dormant = Object.keys(onDisk).filter((jid) => !loaded.has(jid)).sort();
    setText("not-loaded", dormant.length ? "On disk, not loaded: " + dormant.join(", ") : "");
    const scrubbers = new Map(beans.filter((b) => b.modelerType.startsWith("JournalNodeScrubber-"))
      .map((b) => [b.modelerType.slice("JournalNodeScrubber-".length), b]));
    document.getElementById("segments").replaceChildren(
      ...journals.map((j) => segmentsSection(j, scrubbers.get(j.JournalId))));
    document.title = "JournalNode " + info.HostAndPort;
  }

  showNameNodeLink();
  qjm.refreshEvery(load);
})();
