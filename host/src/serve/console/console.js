// Scout's approvals console: the pending approvals of every session this
// caller may see, decided with one click, and a session's trace beside
// them. Everything on the page comes from the admin API with the caller's
// bearer token (kept in this tab's sessionStorage, sent only to this
// origin); nothing is fetched from anywhere else, and every value from the
// API is written as text, never as markup.
"use strict";

const POLL_MS = 1000;
const TOKEN_KEY = "scout.console.token";
const $ = (id) => document.getElementById(id);

let me = null;          // the answer of /v1/whoami
let selected = null;    // the session whose trace is shown
let timer = null;
const deciding = new Set();

function token() { return sessionStorage.getItem(TOKEN_KEY); }

async function api(method, path, body) {
  const headers = { "Authorization": "Bearer " + token(), "Accept": "application/json" };
  const init = { method, headers, cache: "no-store", credentials: "omit", redirect: "error" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let data = null;
  try { data = await response.json(); } catch (_) { data = null; }
  if (!response.ok) {
    const message = data && data.error ? data.error.message : response.statusText;
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return data;
}

function waited(ms) {
  const s = Math.floor(ms / 1000);
  if (s < 60) return "waiting " + s + " s";
  const m = Math.floor(s / 60);
  return "waiting " + m + " min " + (s % 60) + " s";
}

function showSignIn(message) {
  if (timer) { clearInterval(timer); timer = null; }
  me = null;
  // Nothing the last person saw stays in the page, buttons included.
  for (const id of ["approvals", "paused", "capabilities", "trace-rows"]) {
    $(id).replaceChildren();
  }
  $("trace").hidden = true;
  $("trace-hint").hidden = false;
  $("trace-hint").textContent = "Choose an approval to read its session's trace.";
  $("trace-session").textContent = "";
  $("console").hidden = true;
  $("who").hidden = true;
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message || "";
  $("token").focus();
}

async function signIn() {
  try {
    me = await api("GET", "/v1/whoami");
  } catch (e) {
    sessionStorage.removeItem(TOKEN_KEY);
    showSignIn(e.status === 401 ? "That token was not accepted: " + e.message : e.message);
    return;
  }
  $("sign-in").hidden = true;
  $("who").hidden = false;
  $("who-subject").textContent = me.subject;
  $("who-role").textContent = me.role;
  $("console").hidden = false;
  await refresh();
  timer = setInterval(refresh, POLL_MS);
}

function render(pending) {
  const list = $("approvals");
  const seen = new Set();
  for (const a of pending) {
    const key = String(a.id);
    seen.add(key);
    let item = list.querySelector('li[data-id="' + key + '"]');
    if (!item) {
      item = $("approval-template").content.firstElementChild.cloneNode(true);
      item.dataset.id = key;
      item.dataset.session = a.session;
      item.querySelector(".tool").textContent = a.tool;
      item.querySelector(".connector").textContent = a.connector || "?";
      const link = item.querySelector(".session");
      link.textContent = a.session;
      link.addEventListener("click", (ev) => { ev.preventDefault(); showTrace(a.session); });
      item.querySelector(".role").textContent = a.role || "?";
      item.querySelector(".brand").textContent = a.brand || "?";
      item.querySelector(".digest").textContent = a.args_digest;
      item.querySelector(".arguments").textContent =
        a.arguments_text === null ? "(not readable on this host)" : a.arguments_text;
      const approve = item.querySelector(".approve");
      const deny = item.querySelector(".deny");
      approve.addEventListener("click", () => decide(item, a.id, true));
      deny.addEventListener("click", () => decide(item, a.id, false));
      if (!me.may_decide) {
        approve.disabled = true;
        deny.disabled = true;
        item.querySelector(".outcome").textContent = "role " + me.role + " may not decide";
      }
      list.appendChild(item);
    }
    item.querySelector(".waited").textContent = waited(a.waited_ms);
    item.classList.toggle("selected", a.session === selected);
  }
  // Decided elsewhere (or by this page, or withdrawn): gone from the list.
  for (const item of Array.from(list.children)) {
    if (!seen.has(item.dataset.id) && !deciding.has(item.dataset.id)) item.remove();
  }
  $("pending-count").textContent = String(pending.length);
  $("empty").hidden = pending.length > 0;
}

let refreshing = false;

function renderPaused(sessions) {
  const list = $("paused");
  const paused = sessions.filter((s) => s.paused);
  const seen = new Set(paused.map((s) => s.id));
  for (const item of Array.from(list.children)) {
    if (!seen.has(item.dataset.session)) item.remove();
  }
  for (const s of paused) {
    if (list.querySelector('li[data-session="' + CSS.escape(s.id) + '"]')) continue;
    const item = $("paused-template").content.firstElementChild.cloneNode(true);
    item.dataset.session = s.id;
    item.querySelector(".session").textContent = s.id;
    item.querySelector(".role").textContent = s.role;
    item.querySelector(".brand").textContent = s.brand;
    const act = async (method, path, done) => {
      for (const b of item.querySelectorAll("button")) b.disabled = true;
      try {
        await api(method, path);
        item.querySelector(".outcome").textContent = done;
      } catch (e) {
        item.querySelector(".outcome").textContent = e.message;
      }
    };
    item.querySelector(".resume").addEventListener("click", () =>
      act("POST", "/v1/sessions/" + encodeURIComponent(s.id) + "/resume", "resumed"));
    item.querySelector(".end").addEventListener("click", () =>
      act("DELETE", "/v1/sessions/" + encodeURIComponent(s.id), "ended"));
    item.querySelector(".resume").disabled = !me.may_decide;
    item.querySelector(".end").disabled = !me.may_end_sessions;
    list.appendChild(item);
  }
  $("paused-pane").hidden = paused.length === 0;
}

function renderCapabilities(requests) {
  const list = $("capabilities");
  const seen = new Set(requests.map((r) => String(r.id)));
  for (const item of Array.from(list.children)) {
    if (!seen.has(item.dataset.id) && !item.dataset.sent) item.remove();
  }
  for (const r of requests) {
    const key = String(r.id);
    if (list.querySelector('li[data-id="' + key + '"]')) continue;
    const item = $("capability-template").content.firstElementChild.cloneNode(true);
    item.dataset.id = key;
    item.querySelector(".session").textContent = r.session;
    item.querySelector(".goal").textContent = r.request.goal || "";
    item.querySelector(".missing").textContent = r.request.missing_observation || "";
    item.querySelector(".effect").textContent = r.request.proposed_effect || "";
    item.querySelector(".tried").textContent = r.request.safe_alternative_tried || "";
    const send = item.querySelector(".send");
    send.addEventListener("click", async () => {
      const answer = item.querySelector(".answer").value.trim();
      if (!answer) return;
      send.disabled = true;
      try {
        await api("POST", "/v1/capability-requests/" + encodeURIComponent(r.id), { answer });
        item.dataset.sent = "1";
        item.querySelector(".outcome").textContent = "answered; nothing was granted";
        setTimeout(() => { item.remove(); refresh(); }, 1500);
      } catch (e) {
        send.disabled = false;
        item.querySelector(".outcome").textContent = e.message;
      }
    });
    if (!me.may_decide) send.disabled = true;
    list.appendChild(item);
  }
  $("capabilities-pane").hidden = list.children.length === 0;
}

async function refresh() {
  // One refresh at a time: a slow answer is not overtaken by the next tick.
  if (refreshing) return;
  refreshing = true;
  try {
    const body = await api("GET", "/v1/approvals");
    render(body.pending);
    const sessions = await api("GET", "/v1/sessions");
    renderPaused(sessions.sessions || []);
    const asked = await api("GET", "/v1/capability-requests");
    renderCapabilities(asked.requests || []);
    $("status").textContent = "";
    if (selected) await showTrace(selected, true);
  } catch (e) {
    if (e.status === 401) { sessionStorage.removeItem(TOKEN_KEY); showSignIn("Signed out: " + e.message); return; }
    $("status").textContent = "Could not refresh: " + e.message;
  } finally {
    refreshing = false;
  }
}

async function decide(item, id, approve) {
  const key = String(id);
  const outcome = item.querySelector(".outcome");
  for (const b of item.querySelectorAll("button")) b.disabled = true;
  deciding.add(key);
  try {
    const reply = await api("POST", "/v1/approvals/" + encodeURIComponent(id), { approve });
    outcome.textContent = (reply.approved ? "approved" : "denied") + " by " + reply.decided_by;
    item.dataset.decided = reply.approved ? "approved" : "denied";
  } catch (e) {
    outcome.textContent = e.message;
    item.dataset.decided = "error";
  } finally {
    // Left in view a moment so the person sees what happened.
    setTimeout(() => { deciding.delete(key); item.remove(); refresh(); }, 1500);
  }
}

let traceAfter = 0;     // the last trace row shown of the selected session

async function showTrace(session, quiet) {
  if (session !== selected || !quiet) {
    selected = session;
    traceAfter = 0;
    $("trace-rows").replaceChildren();
  }
  for (const item of $("approvals").children) item.classList.toggle("selected", item.dataset.session === session);
  $("trace-session").textContent = session;
  const rows = $("trace-rows");
  // Only the rows after the last one shown, page by page.
  for (;;) {
    let body;
    try {
      body = await api("GET", "/v1/trace?session=" + encodeURIComponent(session) + "&after=" + traceAfter);
    } catch (e) {
      if (!quiet) $("trace-hint").textContent = "Could not read the trace: " + e.message;
      return;
    }
    if (session !== selected) return;
    for (const ev of body.events) {
      const tr = document.createElement("tr");
      tr.className = "event";
      const at = new Date(ev.at_ms).toLocaleTimeString([], { hour12: false });
      const cells = [String(ev.seq), at, ev.tool || "", ev.state, ev.rule || ""];
      cells.forEach((text, i) => {
        const td = document.createElement("td");
        td.textContent = text;
        if (i === 2) td.className = "mono";
        if (i === 3) td.className = "state state-" + ev.state;
        tr.appendChild(td);
      });
      // Newest first: what is happening now is at the top.
      rows.prepend(tr);
      traceAfter = Math.max(traceAfter, ev.seq);
    }
    if (body.next_after === null || body.next_after === undefined) break;
  }
  $("trace").hidden = false;
  $("trace-hint").hidden = true;
}

document.addEventListener("DOMContentLoaded", () => {
  $("sign-in-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const value = $("token").value.trim();
    $("token").value = "";
    if (!value) return;
    sessionStorage.setItem(TOKEN_KEY, value);
    signIn();
  });
  $("sign-out").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showSignIn("");
  });
  if (token()) signIn(); else showSignIn("");
});
