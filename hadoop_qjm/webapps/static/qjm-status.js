/* Helpers shared by the status pages: /jmx, DOM building (text only, never HTML strings),
 * formatting, and the refresh loop. */
"use strict";

const qjm = (() => {
  /** The beans of one /jmx query. */
  async function jmx(query) {
    const response = await fetch("/jmx?qry=" + encodeURIComponent(query), { cache: "no-store" });
    if (!response.ok) {
      throw new Error("/jmx?qry=" + query + " answered " + response.status);
    }
    return (await response.json()).beans;
  }

  /** A new element; attrs are properties (className, href, title, id, hidden) or dataset
   * (an object of data-* attributes); children are nodes or text. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "dataset") {
        Object.assign(node.dataset, value);
      } else if (value !== undefined && value !== null) {
        node[key] = value;
      }
    }
    for (const child of children) {
      node.append(child instanceof Node ? child : String(child ?? "-"));
    }
    return node;
  }

  /** Replace the rows of a table body. */
  function fillRows(tbodyId, rows) {
    document.getElementById(tbodyId).replaceChildren(...rows);
  }

  /** Rows of a two-column (name, value) table. */
  function kvRows(pairs) {
    return pairs.map(([name, value]) => el("tr", {}, el("th", {}, name), el("td", {}, value)));
  }

  function setText(id, text) {
    document.getElementById(id).textContent = text;
  }

  function fmtTime(ms) {
    return Number(ms) > 0 ? new Date(Number(ms)).toLocaleString() : "-";
  }

  function fmtBytes(n) {
    n = Number(n);
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) {
      n /= 1024;
      i += 1;
    }
    return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
  }

  /** An http(s) URL, or null for anything else (a javascript: link must never be made). */
  function safeUrl(text) {
    try {
      const url = new URL(text);
      return url.protocol === "http:" || url.protocol === "https:" ? url : null;
    } catch (e) {
      return null;
    }
  }

  /** Seconds between refreshes: ?refresh=S (at least 0.5), else 3. */
  function refreshMillis() {
    const asked = Number(new URLSearchParams(location.search).get("refresh"));
    return asked > 0 ? Math.max(asked, 0.5) * 1000 : 3000;
  }

  /** Call load() now and again every refreshMillis() after each one finishes; a failure
   * shows in the alert box (and clears with the next success). */
  function refreshEvery(load) {
    const alertBox = document.getElementById("alert");
    const period = refreshMillis();
    let count = 0;
    async function tick() {
      try {
        await load();
        count += 1;
        alertBox.hidden = true;
        const updated = document.getElementById("updated");
        updated.textContent = "updated " + new Date().toLocaleTimeString();
        updated.dataset.refreshes = String(count);
      } catch (e) {
        alertBox.textContent = "Could not refresh: " + e.message;
        alertBox.hidden = false;
      }
      setTimeout(tick, period);
    }
    tick();
  }

  return { jmx, el, fillRows, kvRows, setText, fmtTime, fmtBytes, safeUrl, refreshEvery };
})();
