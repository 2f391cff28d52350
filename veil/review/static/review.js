// veil review page: renders one document at a time and sends each decision to the server at once.
// The server is the only state: every answer carries the document as the review file now has it.
"use strict";
(() => {
  const token = new URLSearchParams(location.search).get("token") || "";
  const $ = (id) => document.getElementById(id);
  let summary = null;
  let view = null;
  let selected = null; // {kind: "ph", i} or {kind: "missed", n}
  let labelsReady = false;

  async function api(path, body) {
    const opts = { headers: { "X-Veil-Token": token } };
    if (body !== undefined) {
      opts.method = "POST";
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(path, opts);
    let data;
    try { data = await r.json(); } catch (e) { data = { error: r.statusText || "no answer" }; }
    if (!r.ok) throw new Error(data.error || r.statusText);
    return data;
  }

  function hue(label) {
    let h = 7;
    for (const c of label) h = (h * 31 + c.charCodeAt(0)) % 360;
    return h;
  }

  function say(text, bad) {
    const m = $("message");
    m.textContent = text;
    m.className = bad ? "bad" : "ok";
  }

  // --- the document list, progress, filters ------------------------------------------------------
  function visibleDocs() {
    const type = $("filter").value, show = $("show").value;
    return summary.docs.filter((d) => (!type || d.labels.includes(type))
      && (show === "all" || (show === "done") === d.done));
  }

  function renderSummary() {
    $("progress").max = Math.max(1, summary.total);
    $("progress").value = summary.done;
    const pct = summary.total ? Math.round(100 * summary.done / summary.total) : 0;
    $("progress-text").textContent = `${summary.done} / ${summary.total} done (${pct}%)`;
    $("reviewer").textContent = summary.reviewer ? `reviewer: ${summary.reviewer}` : "";
    if (!labelsReady) {
      for (const lab of summary.labels) {
        $("label").append(new Option(lab, lab));
        $("filter").append(new Option(lab, lab));
      }
      if (summary.labels.includes("PERSON_NAME")) $("label").value = "PERSON_NAME";
      $("orig-pane").hidden = !summary.has_original;
      labelsReady = true;
    }
    const list = $("doclist");
    list.textContent = "";
    for (const d of visibleDocs()) {
      const a = document.createElement("a");
      a.href = `#doc=${d.index}`;
      a.dataset.index = d.index;
      a.className = (d.done ? "done" : d.touched ? "touched" : "todo") + (view && view.index === d.index ? " current" : "");
      a.textContent = `${d.done ? "✓" : d.touched ? "•" : "○"} ${d.id}`;
      a.title = `${d.masks} masks, ${d.missed} missed, ${d.rejected} rejected`;
      a.addEventListener("click", (ev) => { ev.preventDefault(); open(d.index); });
      list.append(a);
    }
    const cur = list.querySelector(".current");
    if (cur) cur.scrollIntoView({ block: "nearest" });
  }

  async function refreshSummary() {
    summary = await api("/api/summary");
    renderSummary();
  }

  // --- one document ---------------------------------------------------------------------------------
  async function open(index) {
    try {
      view = await api(`/api/doc/${index}`);
    } catch (e) { say(e.message, true); return; }
    selected = null;
    history.replaceState(null, "", `${location.pathname}${location.search}#doc=${index}`);
    renderDoc();
    renderSummary();
  }

  function itemsOf(v) {
    const items = v.placeholders.map((p) => ({ s: p.start, e: p.end, kind: "ph", p }));
    for (const m of v.missed) items.push({ s: m.start, e: m.end, kind: "missed", m });
    return items.sort((a, b) => a.s - b.s);
  }

  function isSelected(it) {
    return selected && selected.kind === it.kind
      && (it.kind === "ph" ? selected.i === it.p.i : selected.n === it.m.n);
  }

  function renderDoc() {
    const v = view, type = $("filter").value;
    $("doc-title").textContent = `${v.id}  (${v.index + 1} of ${summary ? summary.total : "?"})`;
    $("doc-status").textContent = v.done ? "✓ done" : "in review";
    $("doc-status").className = v.done ? "done" : "todo";
    const box = $("masked");
    box.textContent = "";
    let pos = 0;
    for (const it of itemsOf(v)) {
      if (it.s > pos) box.append(document.createTextNode(v.text.slice(pos, it.s)));
      const el = document.createElement("span");
      el.textContent = v.text.slice(it.s, it.e);
      if (it.kind === "ph") {
        const p = it.p;
        el.className = "ph" + (p.rejected ? " rejected" : "") + (p.relabeled ? " relabeled" : "");
        el.dataset.i = p.i;
        el.dataset.tag = p.relabeled ? `→ ${p.label}` : "";
        el.style.setProperty("--h", hue(p.label));
        el.title = `${p.label} (${p.itype})${p.rejected ? ", rejected: not PI" : ""}`;
        if (type && p.label !== type) el.classList.add("dim");
      } else {
        const m = it.m;
        el.className = "missed";
        el.dataset.n = m.n;
        el.dataset.tag = `${m.label}${m.partial ? " partial" : ""} · ${m.itype}`;
        el.title = `missed ${m.label} (${m.itype}${m.partial ? ", partial" : ""})`;
        if (type && m.label !== type) el.classList.add("dim");
      }
      if (isSelected(it)) el.classList.add("selected");
      box.append(el);
      pos = it.e;
    }
    if (pos < v.text.length) box.append(document.createTextNode(v.text.slice(pos)));
    renderOriginal(v, type);
    renderSelected();
  }

  function renderOriginal(v, type) {
    const box = $("original");
    box.textContent = "";
    if (!v.original) return;
    const t = v.original.text;
    const items = v.original.spans.map((sp) => ({ s: sp.start, e: sp.end, p: v.placeholders[sp.i] }));
    for (const om of v.original.missed) items.push({ s: om.start, e: om.end, m: v.missed.find((x) => x.n === om.n) });
    items.sort((a, b) => a.s - b.s);
    let pos = 0;
    for (const it of items) {
      if (it.s < pos) continue; // placeholders that share one stretch of the original
      if (it.s > pos) box.append(document.createTextNode(t.slice(pos, it.s)));
      const el = document.createElement("span");
      el.textContent = t.slice(it.s, it.e);
      if (it.p) {
        const p = it.p;
        el.className = "orig" + (p.rejected ? " rejected" : "");
        el.dataset.i = p.i;
        el.style.setProperty("--h", hue(p.label));
        el.title = `${p.label} (${p.itype})`;
        if (type && p.label !== type) el.classList.add("dim");
        if (selected && selected.kind === "ph" && selected.i === p.i) el.classList.add("selected");
      } else {
        el.className = "missed";
        el.dataset.n = it.m.n;
        el.title = `missed ${it.m.label} (${it.m.itype})`;
        if (type && it.m.label !== type) el.classList.add("dim");
        if (selected && selected.kind === "missed" && selected.n === it.m.n) el.classList.add("selected");
      }
      box.append(el);
      pos = it.e;
    }
    if (pos < t.length) box.append(document.createTextNode(t.slice(pos)));
  }

  function renderSelected() {
    const info = $("selected-info");
    if (!selected) { info.textContent = "Select text and press d or q to tag missed PI; click a mask to reject or retype it."; return; }
    if (selected.kind === "ph") {
      const p = view.placeholders[selected.i];
      info.textContent = `Selected mask ${view.text.slice(p.start, p.end)}: ${p.label} (${p.itype})${p.rejected ? " — rejected" : ""}`;
    } else {
      const m = view.missed.find((x) => x.n === selected.n);
      info.textContent = m ? `Selected missed tag: ${m.label} (${m.itype}${m.partial ? ", partial" : ""})` : "";
    }
  }

  // --- decisions ------------------------------------------------------------------------------------
  async function decide(body, okText) {
    try {
      view = await api(`/api/doc/${view.index}`, body);
      say(okText || "saved");
    } catch (e) {
      say(e.message, true);
      return false;
    }
    if (selected && selected.kind === "missed" && !view.missed.some((m) => m.n === selected.n)) selected = null;
    renderDoc();
    await refreshSummary();
    return true;
  }

  function selectionOffsets() {
    const sel = window.getSelection();
    if (!sel.rangeCount || sel.isCollapsed) return null;
    const r = sel.getRangeAt(0), box = $("masked");
    if (!box.contains(r.startContainer) || !box.contains(r.endContainer)) return null;
    const before = document.createRange();
    before.selectNodeContents(box);
    before.setEnd(r.startContainer, r.startOffset);
    const start = before.toString().length;
    return { start, end: start + r.toString().length };
  }

  async function tagMissed(itype) {
    const off = selectionOffsets();
    if (!off) { say("select some text of the masked document first", true); return; }
    const label = $("label").value;
    if (await decide({ action: "missed", start: off.start, end: off.end, label, itype, partial: $("partial").checked },
      `tagged missed ${label} (${itype})`)) {
      window.getSelection().removeAllRanges();
      $("partial").checked = false;
    }
  }

  function selectedMissed() {
    return selected && selected.kind === "missed" ? view.missed.find((m) => m.n === selected.n) : null;
  }

  async function rejectToggle() {
    if (selected && selected.kind === "ph") {
      const p = view.placeholders[selected.i];
      if (p.rejected) await decide({ action: "undo", target: p.reject_n }, "mask restored");
      else await decide({ action: "reject", ph: p.i }, "mask rejected: not PI");
    } else if (selectedMissed()) {
      await decide({ action: "undo", target: selected.n }, "tag removed");
      selected = null;
      renderSelected();
    } else say("click a mask (or a tag) first, or press Tab", true);
  }

  async function retag(m, label, itype) { // a tag's type: remove it and tag the same text again
    if (await decide({ action: "undo", target: m.n })) {
      const before = new Set(view.missed.map((x) => x.n));
      if (await decide({ action: "missed", start: m.start, end: m.end, label, itype, partial: m.partial }, `now ${label} (${itype})`)) {
        const added = view.missed.find((x) => !before.has(x.n));
        selected = added ? { kind: "missed", n: added.n } : null;
        renderDoc();
      }
    }
  }

  async function relabel() {
    const label = $("label").value;
    const m = selectedMissed();
    if (selected && selected.kind === "ph") {
      await decide({ action: "relabel", ph: selected.i, label, itype: summary.itypes[label] || "" }, `mask is now ${label}`);
    } else if (m) await retag(m, label, m.itype);
    else say("click a mask (or a tag) first, or press Tab", true);
  }

  async function flipItype() {
    const m = selectedMissed();
    if (selected && selected.kind === "ph") {
      const p = view.placeholders[selected.i];
      const itype = p.itype === "DIRECT" ? "QUASI" : "DIRECT";
      await decide({ action: "relabel", ph: p.i, label: p.label, itype }, `mask is now ${itype}`);
    } else if (m) await retag(m, m.label, m.itype === "DIRECT" ? "QUASI" : "DIRECT");
    else say("click a mask (or a tag) first, or press Tab", true);
  }

  async function undo() { await decide({ action: "undo" }, "undone"); }

  async function toggleDone() {
    const wasDone = view.done;
    if (!(await decide({ action: "done", value: !wasDone }, wasDone ? "marked not done" : "done"))) return;
    if (!wasDone) {
      const docs = summary.docs;
      const next = docs.find((d) => d.index > view.index && !d.done) || docs.find((d) => !d.done);
      if (next) open(next.index);
      else say("every document is done: export with veil review MASKED --export ...");
    }
  }

  function step(delta) {
    const docs = visibleDocs();
    if (!docs.length) return;
    let k = docs.findIndex((d) => d.index === view.index);
    k = k < 0 ? 0 : Math.min(docs.length - 1, Math.max(0, k + delta));
    open(docs[k].index);
  }

  function cycle(delta) {
    const items = itemsOf(view);
    if (!items.length) return;
    let k = items.findIndex(isSelected);
    k = k < 0 ? (delta > 0 ? 0 : items.length - 1) : (k + delta + items.length) % items.length;
    const it = items[k];
    selected = it.kind === "ph" ? { kind: "ph", i: it.p.i } : { kind: "missed", n: it.m.n };
    renderDoc();
    const el = document.querySelector("#masked .selected");
    if (el) el.scrollIntoView({ block: "nearest" });
  }

  // --- wiring ---------------------------------------------------------------------------------------
  function onClickText(ev) {
    if (!window.getSelection().isCollapsed) return; // a text selection, not a click
    const el = ev.target.closest("[data-i], [data-n]");
    if (!el) { selected = null; renderDoc(); return; }
    selected = el.dataset.n !== undefined ? { kind: "missed", n: Number(el.dataset.n) } : { kind: "ph", i: Number(el.dataset.i) };
    renderDoc();
  }

  function onKey(ev) {
    const inField = ["SELECT", "INPUT", "TEXTAREA"].includes(document.activeElement.tagName);
    if (ev.key === "Escape") {
      $("help").hidden = true;
      document.activeElement.blur();
      return;
    }
    if (inField || ev.ctrlKey || ev.metaKey || ev.altKey || !view) return;
    const k = ev.key;
    const actions = {
      d: () => tagMissed("DIRECT"), q: () => tagMissed("QUASI"), x: rejectToggle, Delete: rejectToggle,
      c: relabel, i: flipItype, u: undo, Enter: toggleDone, n: () => step(1), ArrowRight: () => step(1),
      p: () => step(-1), ArrowLeft: () => step(-1), a: () => { $("partial").checked = !$("partial").checked; },
      t: () => $("label").focus(), "/": () => $("filter").focus(), "?": () => { $("help").hidden = !$("help").hidden; },
      Tab: () => cycle(ev.shiftKey ? -1 : 1),
    };
    if (/^[1-9]$/.test(k)) {
      const opt = $("label").options[Number(k) - 1];
      if (opt) { $("label").value = opt.value; say(`type: ${opt.value}`); }
      ev.preventDefault();
      return;
    }
    if (actions[k]) {
      ev.preventDefault();
      actions[k]();
    }
  }

  async function start() {
    $("masked").addEventListener("click", onClickText);
    $("original").addEventListener("click", onClickText);
    document.addEventListener("keydown", onKey);
    $("b-direct").addEventListener("click", () => tagMissed("DIRECT"));
    $("b-quasi").addEventListener("click", () => tagMissed("QUASI"));
    $("b-reject").addEventListener("click", rejectToggle);
    $("b-relabel").addEventListener("click", relabel);
    $("b-itype").addEventListener("click", flipItype);
    $("b-undo").addEventListener("click", undo);
    $("b-done").addEventListener("click", toggleDone);
    $("help-btn").addEventListener("click", () => { $("help").hidden = !$("help").hidden; });
    for (const id of ["filter", "show"]) {
      $(id).addEventListener("change", () => { renderSummary(); if (view) renderDoc(); $(id).blur(); });
    }
    $("label").addEventListener("change", () => $("label").blur());
    // buttons keep the text selection: a mousedown on them would otherwise clear it
    for (const b of document.querySelectorAll("#toolbar button")) b.addEventListener("mousedown", (ev) => ev.preventDefault());
    try {
      await refreshSummary();
    } catch (e) { say(e.message, true); return; }
    const m = /doc=(\d+)/.exec(location.hash);
    const first = summary.docs.find((d) => !d.done) || summary.docs[0];
    if (m && Number(m[1]) < summary.total) open(Number(m[1]));
    else if (first) open(first.index);
  }

  document.addEventListener("DOMContentLoaded", start);
})();
