// veil review page: renders one page at a time (a document, or a whole call with a group field) and sends each
// decision, for one document, to the server at once.
// The server is the only state: every answer carries the document as the review file now has it.
"use strict";
(() => {
  const token = new URLSearchParams(location.search).get("token") || "";
  const $ = (id) => document.getElementById(id);
  let summary = null;
  let page = null; // {index, title, docs: [document view, ...]}: one document, or a whole call
  let selected = null; // {doc, kind: "ph", i} or {doc, kind: "missed", n}
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

  const viewOf = (doc) => page && page.docs.find((v) => v.index === doc);

  // --- the page list (documents, or calls with a group field), progress, filters ------------------
  function visiblePages() {
    const type = $("filter").value, show = $("show").value;
    return summary.pages.filter((d) => (!type || d.labels.includes(type))
      && (show === "all" || (show === "done") === d.done));
  }

  function renderSummary() {
    const pages = summary.pages, done = pages.filter((d) => d.done).length;
    $("progress").max = Math.max(1, pages.length);
    $("progress").value = done;
    const pct = pages.length ? Math.round(100 * done / pages.length) : 0;
    $("progress-text").textContent = `${done} / ${pages.length} ${summary.grouped ? "calls " : ""}done (${pct}%)`;
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
    for (const d of visiblePages()) {
      const a = document.createElement("a");
      a.href = `#doc=${d.index}`;
      a.dataset.index = d.index;
      a.className = (d.done ? "done" : d.touched ? "touched" : "todo") + (page && page.index === d.index ? " current" : "");
      a.textContent = `${d.done ? "✓" : d.touched ? "•" : "○"} ${d.title}`;
      a.title = `${summary.grouped ? d.docs.length + " utterances, " : ""}${d.masks} masks, ${d.missed} missed, ${d.rejected} rejected`;
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

  // --- one page: its documents in order -------------------------------------------------------------
  async function open(index) {
    try {
      page = await api(`/api/page/${index}`);
    } catch (e) { say(e.message, true); return; }
    selected = null;
    history.replaceState(null, "", `${location.pathname}${location.search}#doc=${index}`);
    renderPage();
    renderSummary();
  }

  function itemsOf(v) {
    const items = v.placeholders.map((p) => ({ s: p.start, e: p.end, kind: "ph", p, doc: v.index }));
    for (const m of v.missed) items.push({ s: m.start, e: m.end, kind: "missed", m, doc: v.index });
    return items.sort((a, b) => a.s - b.s);
  }

  function isSelected(it) {
    return selected && selected.doc === it.doc && selected.kind === it.kind
      && (it.kind === "ph" ? selected.i === it.p.i : selected.n === it.m.n);
  }

  function pageDone() { return page.docs.every((v) => v.done); }

  function uttBox(pane, v) { // one document's block in a pane (a heading above it when a page holds a call)
    if (summary && summary.grouped) {
      const head = document.createElement("div");
      head.className = "utt-head" + (v.done ? " done" : "");
      head.textContent = `${v.id}${v.done ? "  ✓" : ""}`;
      pane.append(head);
    }
    const box = document.createElement("div");
    box.className = "utt";
    box.dataset.doc = v.index;
    pane.append(box);
    return box;
  }

  function renderPage() {
    const type = $("filter").value;
    const total = summary ? summary.pages.length : "?";
    $("doc-title").textContent = `${page.title}  (${page.index + 1} of ${total}${page.docs.length > 1 ? `, ${page.docs.length} utterances` : ""})`;
    $("doc-status").textContent = pageDone() ? "✓ done" : "in review";
    $("doc-status").className = pageDone() ? "done" : "todo";
    $("masked").textContent = "";
    $("original").textContent = "";
    for (const v of page.docs) {
      renderMasked(uttBox($("masked"), v), v, type);
      if (v.original) renderOriginal(uttBox($("original"), v), v, type);
    }
    renderSelected();
  }

  function renderMasked(box, v, type) {
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
  }

  function renderOriginal(box, v, type) {
    const t = v.original.text;
    const items = v.original.spans.map((sp) => ({ s: sp.start, e: sp.end, p: v.placeholders[sp.i] }));
    for (const om of v.original.missed) items.push({ s: om.start, e: om.end, m: v.missed.find((x) => x.n === om.n) });
    items.sort((a, b) => a.s - b.s);
    const here = selected && selected.doc === v.index;
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
        if (here && selected.kind === "ph" && selected.i === p.i) el.classList.add("selected");
      } else {
        el.className = "missed";
        el.dataset.n = it.m.n;
        el.title = `missed ${it.m.label} (${it.m.itype})`;
        if (type && it.m.label !== type) el.classList.add("dim");
        if (here && selected.kind === "missed" && selected.n === it.m.n) el.classList.add("selected");
      }
      box.append(el);
      pos = it.e;
    }
    if (pos < t.length) box.append(document.createTextNode(t.slice(pos)));
  }

  function renderSelected() {
    const info = $("selected-info");
    const v = selected && viewOf(selected.doc);
    if (!v) { info.textContent = "Select text and press d or q to tag missed PI; click a mask to reject or retype it."; return; }
    const where = page.docs.length > 1 ? ` (in ${v.id})` : "";
    if (selected.kind === "ph") {
      const p = v.placeholders[selected.i];
      info.textContent = `Selected mask ${v.text.slice(p.start, p.end)}${where}: ${p.label} (${p.itype})${p.rejected ? " — rejected" : ""}`;
    } else {
      const m = v.missed.find((x) => x.n === selected.n);
      info.textContent = m ? `Selected missed tag${where}: ${m.label} (${m.itype}${m.partial ? ", partial" : ""})` : "";
    }
  }

  // --- decisions: each one goes to one document of the page, and is saved before the answer ------------
  async function decide(doc, body, okText) {
    try {
      const v = await api(`/api/doc/${doc}`, body);
      page.docs = page.docs.map((x) => (x.index === v.index ? v : x));
      say(okText || "saved");
    } catch (e) {
      say(e.message, true);
      return false;
    }
    const sv = selected && viewOf(selected.doc);
    if (sv && selected.kind === "missed" && !sv.missed.some((m) => m.n === selected.n)) selected = null;
    renderPage();
    await refreshSummary();
    return true;
  }

  function selectionOffsets() {
    const sel = window.getSelection();
    if (!sel.rangeCount || sel.isCollapsed) return null;
    const r = sel.getRangeAt(0);
    const el = (n) => (n.nodeType === 1 ? n : n.parentElement);
    const box = el(r.startContainer) && el(r.startContainer).closest("#masked .utt");
    if (!box || !box.contains(r.endContainer)) return null; // one document's text only
    const before = document.createRange();
    before.selectNodeContents(box);
    before.setEnd(r.startContainer, r.startOffset);
    const start = before.toString().length;
    return { doc: Number(box.dataset.doc), start, end: start + r.toString().length };
  }

  async function tagMissed(itype) {
    const off = selectionOffsets();
    if (!off) { say("select some text of one masked document first", true); return; }
    const label = $("label").value;
    if (await decide(off.doc, { action: "missed", start: off.start, end: off.end, label, itype, partial: $("partial").checked },
      `tagged missed ${label} (${itype})`)) {
      window.getSelection().removeAllRanges();
      $("partial").checked = false;
    }
  }

  function selectedMissed() {
    const v = selected && selected.kind === "missed" && viewOf(selected.doc);
    return v ? v.missed.find((m) => m.n === selected.n) : null;
  }

  function selectedMask() {
    const v = selected && selected.kind === "ph" && viewOf(selected.doc);
    return v ? v.placeholders[selected.i] : null;
  }

  async function rejectToggle() {
    const p = selectedMask();
    if (p) {
      if (p.rejected) await decide(selected.doc, { action: "undo", target: p.reject_n }, "mask restored");
      else await decide(selected.doc, { action: "reject", ph: p.i }, "mask rejected: not PI");
    } else if (selectedMissed()) {
      await decide(selected.doc, { action: "undo", target: selected.n }, "tag removed");
      selected = null;
      renderSelected();
    } else say("click a mask (or a tag) first, or press Tab", true);
  }

  async function retag(doc, m, label, itype) { // a tag's type: remove it and tag the same text again
    if (await decide(doc, { action: "undo", target: m.n })) {
      const before = new Set(viewOf(doc).missed.map((x) => x.n));
      if (await decide(doc, { action: "missed", start: m.start, end: m.end, label, itype, partial: m.partial }, `now ${label} (${itype})`)) {
        const added = viewOf(doc).missed.find((x) => !before.has(x.n));
        selected = added ? { doc, kind: "missed", n: added.n } : null;
        renderPage();
      }
    }
  }

  async function relabel() {
    const label = $("label").value;
    const m = selectedMissed(), p = selectedMask();
    if (p) await decide(selected.doc, { action: "relabel", ph: p.i, label, itype: summary.itypes[label] || "" }, `mask is now ${label}`);
    else if (m) await retag(selected.doc, m, label, m.itype);
    else say("click a mask (or a tag) first, or press Tab", true);
  }

  async function flipItype() {
    const m = selectedMissed(), p = selectedMask();
    if (p) {
      const itype = p.itype === "DIRECT" ? "QUASI" : "DIRECT";
      await decide(selected.doc, { action: "relabel", ph: p.i, label: p.label, itype }, `mask is now ${itype}`);
    } else if (m) await retag(selected.doc, m, m.label, m.itype === "DIRECT" ? "QUASI" : "DIRECT");
    else say("click a mask (or a tag) first, or press Tab", true);
  }

  async function undo() { // the page's latest decision in force (decision numbers grow across documents)
    const v = page.docs.reduce((a, b) => ((b.last || 0) > (a.last || 0) ? b : a));
    await decide(v.index, { action: "undo" }, "undone");
  }

  async function toggleDone() {
    const wasDone = pageDone();
    for (const v of page.docs) { // each document of the call, one decision each
      if (v.done === !wasDone) continue;
      if (!(await decide(v.index, { action: "done", value: !wasDone }, wasDone ? "marked not done" : "done"))) return;
    }
    if (!wasDone) {
      const pages = summary.pages;
      const next = pages.find((d) => d.index > page.index && !d.done) || pages.find((d) => !d.done);
      if (next) open(next.index);
      else say("every document is done: export with veil review MASKED --export ...");
    }
  }

  function step(delta) {
    const pages = visiblePages();
    if (!pages.length) return;
    let k = pages.findIndex((d) => d.index === page.index);
    k = k < 0 ? 0 : Math.min(pages.length - 1, Math.max(0, k + delta));
    open(pages[k].index);
  }

  function cycle(delta) {
    const items = page.docs.flatMap(itemsOf);
    if (!items.length) return;
    let k = items.findIndex(isSelected);
    k = k < 0 ? (delta > 0 ? 0 : items.length - 1) : (k + delta + items.length) % items.length;
    const it = items[k];
    selected = it.kind === "ph" ? { doc: it.doc, kind: "ph", i: it.p.i } : { doc: it.doc, kind: "missed", n: it.m.n };
    renderPage();
    const el = document.querySelector("#masked .selected");
    if (el) el.scrollIntoView({ block: "nearest" });
  }

  // --- wiring ---------------------------------------------------------------------------------------
  function onClickText(ev) {
    if (!window.getSelection().isCollapsed) return; // a text selection, not a click
    const el = ev.target.closest("[data-i], [data-n]");
    const box = el && el.closest(".utt");
    if (!el || !box) { selected = null; renderPage(); return; }
    const doc = Number(box.dataset.doc);
    selected = el.dataset.n !== undefined ? { doc, kind: "missed", n: Number(el.dataset.n) } : { doc, kind: "ph", i: Number(el.dataset.i) };
    renderPage();
  }

  function onKey(ev) {
    const inField = ["SELECT", "INPUT", "TEXTAREA"].includes(document.activeElement.tagName);
    if (ev.key === "Escape") {
      $("help").hidden = true;
      document.activeElement.blur();
      return;
    }
    if (inField || ev.ctrlKey || ev.metaKey || ev.altKey || !page) return;
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
      $(id).addEventListener("change", () => { renderSummary(); if (page) renderPage(); $(id).blur(); });
    }
    $("label").addEventListener("change", () => $("label").blur());
    // buttons keep the text selection: a mousedown on them would otherwise clear it
    for (const b of document.querySelectorAll("#toolbar button")) b.addEventListener("mousedown", (ev) => ev.preventDefault());
    try {
      await refreshSummary();
    } catch (e) { say(e.message, true); return; }
    const m = /doc=(\d+)/.exec(location.hash);
    const first = summary.pages.find((d) => !d.done) || summary.pages[0];
    if (m && Number(m[1]) < summary.pages.length) open(Number(m[1]));
    else if (first) open(first.index);
  }

  document.addEventListener("DOMContentLoaded", start);
})();
