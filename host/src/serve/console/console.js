// Scout's approvals console: the pending approvals of every session this
// caller may see, first on the page and decided with one click, a session's
// trace beside them, and what else waits for a person (paused sessions,
// capability requests) with the admin's tools below them. Everything on the page comes from the admin API with the caller's
// bearer token (kept in this tab's sessionStorage, sent only to this
// origin); nothing is fetched from anywhere else, and every value from the
// API is written as text, never as markup.
"use strict";

const POLL_MS = 1000;
const TOKEN_KEY = "scout.console.token";
// With the identity provider: the refresh token, when the bearer expires
// (ms), and the PKCE verifier, state and nonce of a sign-in under way.
const REFRESH_KEY = "scout.console.refresh";
const EXPIRES_KEY = "scout.console.expires";
const PENDING_KEY = "scout.console.pending-sign-in";
let idp = null;         // the answer of /console/sign-in, when the host has a console client
let refreshTimer = null;
const $ = (id) => document.getElementById(id);

let me = null;          // the answer of /v1/whoami
let selected = null;    // the session whose trace is shown
let timer = null;
const deciding = new Set();

function token() { return sessionStorage.getItem(TOKEN_KEY); }

// What a person is shown of a value: distinct values look distinct. The
// same rule as the host's elicitation text (host/src/shown.rs, whose
// doc says why and lists it): controls, bidirectional controls, invisible
// and format characters, whitespace other than the space, the marker's own
// brackets, fullwidth forms and mathematical alphanumerics always, and, in
// a string that also holds an ASCII letter or digit, every non-ASCII letter
// or number outside Latin, are shown as "⟦U+202E RIGHT-TO-LEFT OVERRIDE⟧".
// The result is only ever written as text (textContent), never as markup.
const SHOWN_NAMES = new Map([
  [0x00A0, "NO-BREAK SPACE"], [0x00AD, "SOFT HYPHEN"], [0x034F, "COMBINING GRAPHEME JOINER"],
  [0x061C, "ARABIC LETTER MARK"], [0x115F, "HANGUL CHOSEONG FILLER"], [0x1160, "HANGUL JUNGSEONG FILLER"],
  [0x17B4, "KHMER VOWEL INHERENT AQ"], [0x17B5, "KHMER VOWEL INHERENT AA"],
  [0x180B, "MONGOLIAN FREE VARIATION SELECTOR ONE"], [0x180C, "MONGOLIAN FREE VARIATION SELECTOR TWO"],
  [0x180D, "MONGOLIAN FREE VARIATION SELECTOR THREE"], [0x180E, "MONGOLIAN VOWEL SEPARATOR"],
  [0x180F, "MONGOLIAN FREE VARIATION SELECTOR FOUR"],
  [0x200B, "ZERO WIDTH SPACE"], [0x200C, "ZERO WIDTH NON-JOINER"], [0x200D, "ZERO WIDTH JOINER"],
  [0x200E, "LEFT-TO-RIGHT MARK"], [0x200F, "RIGHT-TO-LEFT MARK"],
  [0x2028, "LINE SEPARATOR"], [0x2029, "PARAGRAPH SEPARATOR"],
  [0x202A, "LEFT-TO-RIGHT EMBEDDING"], [0x202B, "RIGHT-TO-LEFT EMBEDDING"],
  [0x202C, "POP DIRECTIONAL FORMATTING"], [0x202D, "LEFT-TO-RIGHT OVERRIDE"],
  [0x202E, "RIGHT-TO-LEFT OVERRIDE"], [0x202F, "NARROW NO-BREAK SPACE"],
  [0x205F, "MEDIUM MATHEMATICAL SPACE"], [0x2060, "WORD JOINER"], [0x2061, "FUNCTION APPLICATION"],
  [0x2062, "INVISIBLE TIMES"], [0x2063, "INVISIBLE SEPARATOR"], [0x2064, "INVISIBLE PLUS"],
  [0x2066, "LEFT-TO-RIGHT ISOLATE"], [0x2067, "RIGHT-TO-LEFT ISOLATE"],
  [0x2068, "FIRST STRONG ISOLATE"], [0x2069, "POP DIRECTIONAL ISOLATE"],
  [0x27E6, "MATHEMATICAL LEFT WHITE SQUARE BRACKET"], [0x27E7, "MATHEMATICAL RIGHT WHITE SQUARE BRACKET"],
  [0x2800, "BRAILLE PATTERN BLANK"], [0x3000, "IDEOGRAPHIC SPACE"], [0x3164, "HANGUL FILLER"],
  [0xFEFF, "ZERO WIDTH NO-BREAK SPACE"], [0xFFA0, "HALFWIDTH HANGUL FILLER"],
]);
const SHOWN_LATIN = [[0x00AA, 0x00AA], [0x00BA, 0x00BA], [0x00C0, 0x00D6], [0x00D8, 0x00F6],
  [0x00F8, 0x02AF], [0x1E00, 0x1EFF], [0x2C60, 0x2C7F], [0xA720, 0xA7FF], [0xAB30, 0xAB6F],
  [0xFB00, 0xFB06]];
const SHOWN_FORMAT = [[0x0600, 0x0605], [0x06DD, 0x06DD], [0x070F, 0x070F], [0x08E2, 0x08E2],
  [0x206A, 0x206F], [0xFFF9, 0xFFFB], [0x110BD, 0x110BD], [0x110CD, 0x110CD], [0x13430, 0x1343F],
  [0x1BCA0, 0x1BCA3], [0x1D173, 0x1D17A]];
const SHOWN_SCRIPTS = [[0x0370, 0x03FF, "GREEK"], [0x1F00, 0x1FFF, "GREEK"],
  [0x0400, 0x052F, "CYRILLIC"], [0x1C80, 0x1C8F, "CYRILLIC"], [0x2DE0, 0x2DFF, "CYRILLIC"],
  [0xA640, 0xA69F, "CYRILLIC"], [0x0530, 0x058F, "ARMENIAN"], [0x0590, 0x05FF, "HEBREW"],
  [0x0600, 0x06FF, "ARABIC"], [0x13A0, 0x13FF, "CHEROKEE"], [0xAB70, 0xABBF, "CHEROKEE"]];
const within = (ranges, cp) => ranges.some((r) => cp >= r[0] && cp <= r[1]);
const CONTROL = /^\p{Cc}$/u;
const WHITE_SPACE = /^\p{White_Space}$/u;
const ALPHABETIC = /^\p{Alphabetic}$/u;
const NUMERIC = /^\p{N}$/u;
const ASCII_ALNUM = /[A-Za-z0-9]/;

function alwaysShown(c, cp) {
  if (SHOWN_NAMES.has(cp)) return SHOWN_NAMES.get(cp);
  if (CONTROL.test(c)) return "CONTROL";
  if ((cp >= 0x2000 && cp <= 0x200A) || (WHITE_SPACE.test(c) && c !== " ")) return "SPACE";
  if (cp >= 0xFE00 && cp <= 0xFE0F) return "VARIATION SELECTOR-" + (cp - 0xFE00 + 1);
  if (cp >= 0xE0100 && cp <= 0xE01EF) return "VARIATION SELECTOR-" + (cp - 0xE0100 + 17);
  if (cp >= 0xE0000 && cp <= 0xE007F) return "TAG";
  if (within(SHOWN_FORMAT, cp)) return "FORMAT";
  if ((cp >= 0xE000 && cp <= 0xF8FF) || cp >= 0xF0000) return "PRIVATE USE";
  if (cp >= 0xFF01 && cp <= 0xFF5E) return "FULLWIDTH";
  if (cp >= 0x1D400 && cp <= 0x1D7FF) return "MATHEMATICAL ALPHANUMERIC";
  // Not in a valid string (the host's JSON never holds one).
  if (cp >= 0xD800 && cp <= 0xDFFF) return "SURROGATE";
  return null;
}

function otherScript(c, cp) {
  const letter = ALPHABETIC.test(c);
  if (cp < 0x80 || !(letter || NUMERIC.test(c)) || within(SHOWN_LATIN, cp)) return null;
  const script = SHOWN_SCRIPTS.find((r) => cp >= r[0] && cp <= r[1]);
  return (script ? script[2] : "NON-LATIN") + (letter ? " LETTER" : " NUMBER");
}

// `s` as a person is shown it: { text, marked }. With `json`, tab, line
// feed and carriage return stay (JSON shows them escaped).
function shown(s, json) {
  const mixed = ASCII_ALNUM.test(s);
  let text = "";
  let marked = false;
  for (const c of s) {
    const cp = c.codePointAt(0);
    const keep = json && (c === "\t" || c === "\n" || c === "\r");
    const label = keep ? null : (alwaysShown(c, cp) || (mixed ? otherScript(c, cp) : null));
    if (label === null) {
      text += c;
    } else {
      marked = true;
      text += "\u27E6U+" + cp.toString(16).toUpperCase().padStart(4, "0") + " " + label + "\u27E7";
    }
  }
  return { text, marked };
}

// The canonical JSON text of an approval's arguments (`arguments_text`,
// whose SHA-256 is the digest) with each key and string value shown as
// above; outside strings it is JSON's own ASCII and stays. Read from the
// text, not re-serialised, so the order and numbers are the host's.
function shownJson(source) {
  let text = "";
  let marked = false;
  let i = 0;
  while (i < source.length) {
    if (source[i] !== "\"") { text += source[i]; i += 1; continue; }
    let j = i + 1;
    while (j < source.length && source[j] !== "\"") j += source[j] === "\\" ? 2 : 1;
    const value = JSON.parse(source.slice(i, j + 1));
    const s = shown(value, true);
    marked = marked || s.marked;
    text += JSON.stringify(s.text);
    i = j + 1;
  }
  return { text, marked };
}

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

// --- Sign-in with the identity provider: authorization code + PKCE ---

function base64url(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomText() {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

// A token's claims, read only to schedule its refresh and check the nonce
// (the host verifies its signature).
function claimsOf(jwt) {
  try {
    const part = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(part + "===".slice((part.length + 3) % 4)));
  } catch (_) {
    return {};
  }
}

async function startIdpSignIn() {
  const verifier = randomText();
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  const state = randomText();
  const nonce = randomText();
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ verifier, state, nonce }));
  const url = new URL(idp.authorization_endpoint);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", idp.client_id);
  url.searchParams.set("redirect_uri", location.origin + "/console/");
  url.searchParams.set("scope", idp.scope);
  url.searchParams.set("state", state);
  url.searchParams.set("nonce", nonce);
  url.searchParams.set("code_challenge", base64url(new Uint8Array(digest)));
  url.searchParams.set("code_challenge_method", "S256");
  location.assign(url.toString());
}

// The token endpoint, through this host (see host/src/serve/console/mod.rs).
async function redeem(body) {
  const response = await fetch("/console/token", {
    method: "POST", cache: "no-store", credentials: "omit", redirect: "error",
    headers: { "Content-Type": "application/json", "Accept": "application/json" },
    body: JSON.stringify(body),
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new Error(data && data.error ? data.error.message : response.statusText);
  return data;
}

// Keeps the issuer's answer: the bearer this host checks, the refresh
// token, and when to refresh (at three quarters of the bearer's life).
function keepTokens(answer, nonce) {
  const bearer = idp.bearer === "access_token" ? answer.access_token : answer.id_token;
  if (!bearer) throw new Error("the identity provider sent no " + idp.bearer);
  if (nonce !== undefined && answer.id_token && claimsOf(answer.id_token).nonce !== nonce) {
    throw new Error("the identity provider's answer is not for this sign-in (nonce)");
  }
  const exp = claimsOf(bearer).exp;
  const expires = exp ? exp * 1000 : Date.now() + (answer.expires_in || 300) * 1000;
  sessionStorage.setItem(TOKEN_KEY, bearer);
  sessionStorage.setItem(EXPIRES_KEY, String(expires));
  if (answer.refresh_token) sessionStorage.setItem(REFRESH_KEY, answer.refresh_token);
  scheduleRefresh();
}

function scheduleRefresh() {
  if (refreshTimer) { clearTimeout(refreshTimer); refreshTimer = null; }
  const expires = Number(sessionStorage.getItem(EXPIRES_KEY) || 0);
  if (!expires || !sessionStorage.getItem(REFRESH_KEY)) return;
  const left = expires - Date.now();
  refreshTimer = setTimeout(refreshTokens, Math.max(1000, left * 0.75));
}

async function refreshTokens() {
  refreshTimer = null;
  const refreshToken = sessionStorage.getItem(REFRESH_KEY);
  if (!refreshToken) return;
  try {
    keepTokens(await redeem({ grant_type: "refresh_token", refresh_token: refreshToken }));
  } catch (e) {
    // The bearer still works until it expires; then the page asks to sign in again.
    sessionStorage.removeItem(REFRESH_KEY);
    $("status").textContent = "Could not renew your sign-in: " + e.message;
  }
}

// Back from the identity provider with `?code=…&state=…` (or `?error=…`).
async function finishIdpSignIn(params) {
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) || "null");
  sessionStorage.removeItem(PENDING_KEY);
  history.replaceState(null, "", "/console/");
  if (params.get("error")) {
    showSignIn("The identity provider did not sign you in: " + params.get("error") + " " + (params.get("error_description") || ""));
    return;
  }
  if (!pending || pending.state !== params.get("state")) {
    showSignIn("That sign-in was not started in this tab (its state does not match): sign in again.");
    return;
  }
  try {
    keepTokens(await redeem({
      grant_type: "authorization_code",
      code: params.get("code"),
      code_verifier: pending.verifier,
      redirect_uri: location.origin + "/console/",
    }), pending.nonce);
  } catch (e) {
    showSignIn("Not signed in: " + e.message);
    return;
  }
  signIn();
}

// The bearer stopped working while writes wait: they stay in view, their
// buttons off, until the person signs in again.
function expired(message) {
  if (timer) { clearInterval(timer); timer = null; }
  if (refreshTimer) { clearTimeout(refreshTimer); refreshTimer = null; }
  sessionStorage.removeItem(TOKEN_KEY);
  document.body.classList.add("expired");
  for (const b of $("console").querySelectorAll("button")) b.disabled = true;
  $("expired").hidden = false;
  $("status").textContent = message;
}

function showSignIn(message) {
  if (timer) { clearInterval(timer); timer = null; }
  if (refreshTimer) { clearTimeout(refreshTimer); refreshTimer = null; }
  $("expired").hidden = true;
  document.body.classList.remove("expired");
  me = null;
  // The next person starts with no session chosen.
  selected = null;
  // Nothing the last person saw stays in the page, buttons included.
  for (const id of ["approvals", "paused", "capabilities", "trace-rows", "decisions"]) {
    $(id).replaceChildren();
  }
  $("connect-connector").replaceChildren();
  $("connect-pane").hidden = true;
  $("paused-pane").hidden = true;
  $("capabilities-pane").hidden = true;
  showAdmin();
  $("connect-outcome").textContent = "";
  $("connect-link").hidden = true;
  $("connect-link").removeAttribute("href");
  $("trace").hidden = true;
  $("trace-hint").hidden = false;
  $("trace-hint").textContent = "Choose an approval to read its session's trace.";
  $("trace-session").textContent = "";
  $("console").hidden = true;
  $("who").hidden = true;
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message || "";
  $("idp").hidden = !idp;
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
  $("expired").hidden = true;
  document.body.classList.remove("expired");
  $("who").hidden = false;
  $("who-subject").textContent = me.subject;
  $("who-role").textContent = me.role;
  $("console").hidden = false;
  // Keyboard focus starts at the waiting approvals: the next Tab is the
  // first card's Approve.
  $("approvals-heading").focus();
  if (me.role === "admin") await showConnect();
  await refresh();
  timer = setInterval(refresh, POLL_MS);
}

// One line per GraphQL route of an approval (`graphql` in the approvals API).
function graphqlText(routes) {
  return routes.map((r) => {
    if (r.root_fields === "any") {
      return r.route + ": any root field; this document holds " + shown(String(r.document)).text;
    }
    return r.route + ": " + r.operation + " selecting only " + r.root_fields.map((f) => shown(f).text).join(", ");
  }).join("\n");
}

// Values longer than this (characters or lines) are folded: a summary line
// open to the whole value, never cut.
const FOLD_CHARS = 600;
const FOLD_LINES = 12;

// One argument's value, as its type reads best: a string with line breaks
// as a text block, a list of files (`path` and `content`, as a commit's)
// as files under their paths, anything else as indented JSON. Every piece
// is written as text, with hidden characters marked as in the exact text.
function valueView(value, marks) {
  const block = (text) => {
    // Line breaks and tabs stay as they are in a text block.
    const s = shown(text, true);
    if (s.marked) marks.marked = true;
    const pre = document.createElement("pre");
    pre.className = "text-block";
    pre.textContent = s.text;
    const lines = s.text.split("\n").length;
    if (s.text.length <= FOLD_CHARS && lines <= FOLD_LINES) return pre;
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = s.text.split("\n")[0].slice(0, 80) + " … (" + lines + (lines === 1 ? " line, " : " lines, ") + s.text.length + " characters: open to read all)";
    details.append(summary, pre);
    return details;
  };
  const isFile = (v) => v && typeof v === "object" && !Array.isArray(v)
    && typeof v.path === "string" && typeof v.content === "string";
  if (Array.isArray(value) && value.length > 0 && value.every(isFile)) {
    const files = document.createElement("div");
    files.className = "files";
    for (const f of value) {
      const file = document.createElement("div");
      file.className = "file";
      const path = document.createElement("div");
      path.className = "file-path mono";
      const p = shown(f.path, false);
      if (p.marked) marks.marked = true;
      const rest = Object.keys(f).filter((k) => k !== "path" && k !== "content");
      path.textContent = p.text + (rest.length ? "  " + JSON.stringify(Object.fromEntries(rest.map((k) => [k, f[k]]))) : "");
      file.append(path, block(f.content));
      files.appendChild(file);
    }
    return files;
  }
  if (typeof value === "string" && value.includes("\n")) return block(value);
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  if (text.length <= 120 && !text.includes("\n")) {
    // A short value on the line of its name.
    const s = shown(text, true);
    if (s.marked) marks.marked = true;
    const span = document.createElement("span");
    span.className = "inline-value mono";
    span.textContent = s.text;
    return span;
  }
  return block(text);
}

// The arguments one by one, each under its name (its schema's description
// on hover).
function argumentsView(item, args, schema) {
  const view = item.querySelector(".args-view");
  view.replaceChildren();
  const marks = { marked: false };
  if (!args || typeof args !== "object") {
    view.textContent = "(not readable on this host)";
    return marks.marked;
  }
  const properties = (schema && schema.properties) || {};
  for (const name of Object.keys(args)) {
    const row = document.createElement("div");
    row.className = "arg";
    const label = document.createElement("div");
    label.className = "arg-name mono";
    label.textContent = name;
    const described = properties[name] && properties[name].description;
    if (described) label.title = described;
    const value = valueView(args[name], marks);
    if (value.classList.contains("inline-value")) row.classList.add("short");
    row.append(label, value);
    view.appendChild(row);
  }
  return marks.marked;
}

function timeLeft(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return "refused unanswered in " + s + " s";
  return "refused unanswered in " + Math.floor(s / 60) + " min " + (s % 60) + " s";
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
      const tool = shown(a.tool).text;
      item.querySelector(".tool").textContent = tool;
      item.querySelector(".connector").textContent = a.connector || "?";
      const link = item.querySelector(".session");
      link.textContent = a.session;
      link.addEventListener("click", (ev) => { ev.preventDefault(); showTrace(a.session); });
      item.querySelector(".role").textContent = a.role || "?";
      item.querySelector(".brand").textContent = a.brand || "?";
      item.querySelector(".digest").textContent = a.args_digest;
      // Distinct arguments look distinct: what the markers stand for runs.
      const args = a.arguments_text === null
        ? { text: "(not readable on this host)", marked: false }
        : shownJson(a.arguments_text);
      item.querySelector(".arguments").textContent = args.text;
      const facts = a.tool_facts || {};
      const marked = argumentsView(item, a.arguments, facts.input_schema) || args.marked;
      item.querySelector(".shown-warning").hidden = !marked;
      if (marked) item.dataset.marked = "1";
      item.querySelector(".description").textContent = facts.description || "";
      item.querySelector(".effect").textContent = facts.effect || "write";
      item.querySelector(".billed").hidden = !facts.billed;
      const reaches = item.querySelector(".reaches");
      for (const r of facts.reaches || []) {
        const li = document.createElement("li");
        li.textContent = r.route + (r.origin ? "  at " + r.origin : "");
        reaches.appendChild(li);
      }
      if (!reaches.children.length) {
        const li = document.createElement("li");
        li.textContent = "no HTTP request (every one is refused)";
        reaches.appendChild(li);
      }
      const recent = item.querySelector(".recent");
      for (const r of a.recent || []) {
        const li = document.createElement("li");
        li.textContent = new Date(r.at_ms).toLocaleTimeString([], { hour12: false }) + "  " + shown(r.tool || "").text;
        recent.appendChild(li);
      }
      // What the tool may send over GraphQL: the root fields its route
      // names, or the operations of the document it was given.
      if (Array.isArray(a.graphql) && a.graphql.length > 0) {
        item.querySelector(".graphql-text").textContent = graphqlText(a.graphql);
        item.querySelector(".graphql").hidden = false;
      }
      const approve = item.querySelector(".approve");
      const deny = item.querySelector(".deny");
      // Each card's buttons and details say whose they are to a screen reader.
      const whose = tool + " in " + (a.brand || "?") + ", session " + a.session;
      approve.setAttribute("aria-label", "Approve " + whose);
      deny.setAttribute("aria-label", "Deny " + whose);
      item.querySelector(".body").setAttribute("aria-label", "What " + whose + " will do");
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
    if (typeof a.refused_in_ms === "number") item.querySelector(".refused-in").textContent = timeLeft(a.refused_in_ms);
    item.classList.toggle("selected", a.session === selected);
  }
  // Decided elsewhere (or by this page, or withdrawn): gone from the list.
  for (const item of Array.from(list.children)) {
    if (!seen.has(item.dataset.id) && !deciding.has(item.dataset.id)) item.remove();
  }
  $("pending-count").textContent = String(pending.length);
  $("empty").hidden = pending.length > 0;
  // Beside the list, the trace of the top card's session until the person
  // chooses one: the space beside the approvals is never blank while one waits.
  if (!selected && list.firstElementChild) showTrace(list.firstElementChild.dataset.session, true);
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
  showAdmin();
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
    // The agent's words, shown as the approvals' arguments are.
    item.querySelector(".goal").textContent = shown(r.request.goal || "").text;
    item.querySelector(".missing").textContent = shown(r.request.missing_observation || "").text;
    item.querySelector(".effect").textContent = shown(r.request.proposed_effect || "").text;
    item.querySelector(".tried").textContent = shown(r.request.safe_alternative_tried || "").text;
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
  showAdmin();
}

// The panels below the approvals show when one of them has something, and
// a line under the approvals says what else waits there for a person.
function showAdmin() {
  const panes = ["paused-pane", "capabilities-pane", "connect-pane"];
  $("admin").hidden = panes.every((id) => $(id).hidden);
  const count = (n, one, many) => n + " " + (n === 1 ? one : many);
  const waiting = [];
  const paused = $("paused").children.length;
  const asked = $("capabilities").children.length;
  if (paused) waiting.push(count(paused, "paused session", "paused sessions"));
  if (asked) waiting.push(count(asked, "capability request", "capability requests"));
  $("elsewhere-link").textContent = "Also waiting for a person, below: " + waiting.join(", ");
  $("elsewhere").hidden = waiting.length === 0;
}

// The signed-in person's latest decisions (newest first).
async function refreshDecisions() {
  let body;
  try { body = await api("GET", "/v1/decisions?mine=true"); } catch (_) { return; }
  const list = $("decisions");
  list.replaceChildren();
  for (const d of body.decisions || []) {
    const li = document.createElement("li");
    li.className = "decision outcome-" + (d.outcome || "");
    li.textContent = new Date(d.at_ms).toLocaleTimeString([], { hour12: false }) + "  " + (d.outcome || "?") + "  "
      + shown(d.tool || "").text + "  " + d.brand + "  " + d.session;
    list.appendChild(li);
  }
  $("no-decisions").hidden = list.children.length > 0;
}

let ticks = 0;

async function refresh() {
  // One refresh at a time: a slow answer is not overtaken by the next tick.
  if (refreshing) return;
  refreshing = true;
  if (ticks++ % 5 === 0) refreshDecisions();
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
    if (e.status === 401) { expired("Signed out: " + e.message); return; }
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
    setTimeout(() => { deciding.delete(key); item.remove(); refresh(); refreshDecisions(); }, 1500);
  }
}

// The remote MCP servers this host serves, for an admin to connect a brand
// to; the authorization page opens apart, and its answer comes back to the
// host, never to this page.
async function showConnect() {
  let body;
  try { body = await api("GET", "/v1/reviews"); } catch (_) { return; }
  const names = Object.keys(body.remote || {}).sort();
  const select = $("connect-connector");
  select.replaceChildren();
  for (const name of names) {
    const option = document.createElement("option");
    option.value = name;
    option.textContent = name;
    select.appendChild(option);
  }
  $("connect-pane").hidden = names.length === 0;
  showAdmin();
}

async function connect() {
  const brand = $("connect-brand").value.trim();
  const connector = $("connect-connector").value;
  if (!brand || !connector) return;
  const button = $("connect-button");
  const link = $("connect-link");
  button.disabled = true;
  link.hidden = true;
  $("connect-outcome").textContent = "Asking " + connector + " how to sign in…";
  try {
    const started = await api("POST", "/v1/brands/" + encodeURIComponent(brand) + "/connections/" + encodeURIComponent(connector) + "/authorize", {});
    link.href = started.authorization_url;
    link.hidden = false;
    $("connect-outcome").textContent = "Approve at " + new URL(started.authorization_url).origin + " within ten minutes; " + brand + "'s connection is stored when it sends you back.";
    window.open(started.authorization_url, "_blank", "noopener,noreferrer");
  } catch (e) {
    $("connect-outcome").textContent = "Not connected: " + e.message;
  } finally {
    button.disabled = false;
  }
}

// `text` in `cell`, able to wrap after each underscore (a tool's or rule's
// name is one long identifier): <wbr> elements between its pieces, which
// add no character to its text, copied or read.
function breakable(cell, text) {
  for (const piece of text.split(/(?<=_)(?!_)/)) {
    if (cell.firstChild) cell.appendChild(document.createElement("wbr"));
    cell.appendChild(document.createTextNode(piece));
  }
}

let traceAfter = 0;     // the last trace row shown of the selected session
// A session's set-up (what it was registered, found eligible for, offered
// and not) comes before its first call and is most of a short session's
// rows: folded under one line that says what it holds, opened on a click.
let setup = null;       // {summary, rows, counts, open} of the selected session

function foldSetup(tr, ev) {
  if (!setup) {
    const summary = document.createElement("tr");
    summary.className = "setup-summary";
    const td = document.createElement("td");
    td.colSpan = 5;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "link setup-toggle";
    button.addEventListener("click", () => {
      setup.open = !setup.open;
      for (const row of setup.rows) row.hidden = !setup.open;
      describeSetup();
    });
    td.appendChild(button);
    summary.appendChild(td);
    setup = { summary, rows: [], counts: {}, open: false };
  }
  tr.classList.add("setup");
  tr.hidden = !setup.open;
  setup.rows.push(tr);
  setup.counts[ev.state] = (setup.counts[ev.state] || 0) + 1;
  describeSetup();
}

function describeSetup() {
  const parts = Object.entries(setup.counts).map(([state, n]) => n + " " + state);
  setup.summary.querySelector("button").textContent =
    (setup.open ? "▾ " : "▸ ") + "Session set-up: " + setup.rows.length + " rows (" + parts.join(", ") + ")";
}

// One reading of the trace at a time: a click and the poll's tick never
// both read from the same row, so no row is shown twice.
let traceReading = Promise.resolve();
function showTrace(session, quiet) {
  const reading = traceReading.then(() => readTrace(session, quiet));
  traceReading = reading.catch(() => {});
  return reading;
}

async function readTrace(session, quiet) {
  if (session !== selected || !quiet) {
    selected = session;
    traceAfter = 0;
    setup = null;
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
      // A refused call's tool is whatever name the agent sent.
      const cells = [String(ev.seq), at, shown(ev.tool || "").text, ev.state, ev.rule || ""];
      cells.forEach((text, i) => {
        const td = document.createElement("td");
        if (i === 2 || i === 4) {
          breakable(td, text);
        } else {
          td.textContent = text;
        }
        if (i === 2) td.className = "mono";
        if (i === 3) td.className = "state state-" + ev.state;
        tr.appendChild(td);
      });
      // Newest first: what is happening now is at the top. The set-up
      // rows before the first call sit under their summary line.
      const settingUp = ev.call_id === "session" || ev.rule === "session_opened";
      const folded = settingUp && !rows.querySelector("tr.event:not(.setup)");
      rows.prepend(tr);
      if (folded) {
        foldSetup(tr, ev);
        rows.prepend(setup.summary);
      }
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
  $("connect-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    connect();
  });
  $("sign-out").addEventListener("click", () => {
    for (const key of [TOKEN_KEY, REFRESH_KEY, EXPIRES_KEY]) sessionStorage.removeItem(key);
    showSignIn("");
  });
  $("idp-sign-in").addEventListener("click", startIdpSignIn);
  $("sign-in-again").addEventListener("click", () => {
    if (idp) startIdpSignIn(); else { $("sign-in").hidden = false; $("token").focus(); }
  });
  start();
});

async function start() {
  try {
    const answer = await (await fetch("/console/sign-in", { cache: "no-store", credentials: "omit" })).json();
    idp = answer.oidc || null;
  } catch (_) {
    idp = null;
  }
  if (idp) $("idp-issuer").textContent = idp.issuer;
  const params = new URLSearchParams(location.search);
  if (idp && (params.has("code") || params.has("error"))) {
    await finishIdpSignIn(params);
  } else if (token()) {
    scheduleRefresh();
    signIn();
  } else {
    showSignIn("");
  }
}
