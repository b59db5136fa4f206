//! The approvals console (`/console`) in a real browser: headless Chromium
//! driven through ChromeDriver by Selenium (`tests/mcp_client/console_browser.py`)
//! while the official MCP client waits on GitHub writes of a person-chat
//! session on the real `serve` binary. A write approved in the page reaches
//! GitHub; one denied in the page does not; one decided through the API
//! leaves the page by itself. `SCOUT_CONSOLE_SCREENSHOT=docs/console.png`
//! keeps the screenshot the test takes (how README's picture is made). At
//! the viewport sizes of common laptops, the waiting approvals and their
//! buttons come first, without scrolling
//! ([`the_waiting_approvals_and_their_buttons_come_first_at_laptop_sizes`]).

use crate::common;
use scout_tests::fake_github::FakeGitHub;
use scout_tests::{ServeProcess, python};
use std::path::Path;
use std::process::Command;

const GITHUB_TOKEN: &str = "ghp_consoleBrowserToken0123456789";
const ADMIN_TOKEN: &str = "admin-token-for-the-console-0123456789";

/// Runs a browser script to its end; the JSON summary it prints last.
async fn browser_summary(mut browser: Command, serve: &ServeProcess) -> serde_json::Value {
    let run = tokio::task::spawn_blocking(move || browser.output().expect("run the browser test"));
    let output = tokio::time::timeout(crate::common::EVENTUALLY, run)
        .await
        .expect("the browser test finishes")
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        // The script's own words last: a log cut to its tail still says why.
        "the browser test failed\nserve:\n{}\nthe browser test:\n{out}\n{err}",
        serve.stderr()
    );
    serde_json::from_str(out.lines().last().unwrap_or("")).expect("a JSON summary")
}

/// A fake GitHub and the real `serve` binary against it, writes on, run in
/// a fresh directory named after `name`.
async fn serve(name: &str) -> (FakeGitHub, ServeProcess, std::path::PathBuf) {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let (dir, config) = scout_tests::serve::fresh_config(
        name,
        &scout_tests::serve_config_for_github(&github.origin()),
    );
    let serve = common::serve_as(&config, ADMIN_TOKEN, "6d")
        .current_dir(&dir)
        .env("GITHUB_ALLOW_WRITES", "true")
        // Long enough that only the person's click ends a wait.
        .env("APPROVAL_TIMEOUT_MS", "120000")
        .start();
    (github, serve, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_approves_and_denies_in_the_browser_while_the_client_waits() {
    let Some((chromium, chromedriver)) = scout_tests::chromium() else {
        return;
    };
    let (github, serve, dir) = serve("console").await;
    let base = serve.base.clone();

    let screenshot = std::env::var_os("SCOUT_CONSOLE_SCREENSHOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.join("console.png"));
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/console_browser.py");
    let shot = screenshot.clone();
    let mut browser = Command::new(python());
    browser
        .arg(&script)
        .args(["--base", &base, "--admin-token", ADMIN_TOKEN])
        .args(["--github-token", GITHUB_TOKEN, "--chromium"])
        .arg(&chromium)
        .arg("--chromedriver")
        .arg(&chromedriver)
        .arg("--screenshot")
        .arg(&shot)
        .arg("--approval-screenshot")
        .arg(
            std::env::var_os("SCOUT_CONSOLE_APPROVAL_SCREENSHOT")
                .map(std::path::PathBuf::from)
                .unwrap_or_else(|| dir.join("console-approval.png")),
        );
    let summary = browser_summary(browser, &serve).await;
    assert_eq!(summary["ok"], true);

    // The upstream side: the approved writes happened, the denied one never
    // reached GitHub at all.
    for made in ["scout/console-approved", "scout/api-approved"] {
        assert!(
            github.branch_sha("octo", "hello", made).is_some(),
            "{made} exists"
        );
    }
    assert!(
        github
            .branch_sha("octo", "hello", "scout/console-denied")
            .is_none()
    );
    let ref_writes: Vec<_> = github
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/git/refs"))
        .collect();
    assert_eq!(
        ref_writes.len(),
        2,
        "no upstream request for the denied write"
    );
    assert!(
        ref_writes
            .iter()
            .all(|r| !String::from_utf8_lossy(&r.body).contains("console-denied"))
    );
    let png = std::fs::read(&screenshot).expect("the screenshot was taken");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG screenshot");
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A PNG's width and height, from its header (`IHDR`, the first chunk).
fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if !png.starts_with(b"\x89PNG\r\n\x1a\n") || png.get(12..16) != Some(b"IHDR") {
        return None;
    }
    let word = |at: usize| Some(u32::from_be_bytes(png.get(at..at + 4)?.try_into().ok()?));
    Some((word(16)?, word(20)?))
}

/// The approvals first, at the sizes of common laptops' browsers (the
/// viewport, inside the browser's own chrome, 1366x768 and 1440x900): with
/// three writes waiting, one of them with long arguments, and a paused
/// session and a capability request below them, every card's Approve and
/// Deny are on screen with the page unscrolled, the approvals come before
/// the panels in the document, on screen and in focus order, and a click on
/// Approve where it is makes the write (`tests/mcp_client/console_layout.py`).
/// The screenshots stay in the test's directory, and are copied to
/// `SCOUT_CONSOLE_SCREENSHOT_DIR` when it is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_waiting_approvals_and_their_buttons_come_first_at_laptop_sizes() {
    let Some((chromium, chromedriver)) = scout_tests::chromium() else {
        return;
    };
    let (github, serve, dir) = serve("console-layout").await;
    let shots = dir.join("screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/console_layout.py");
    let mut browser = Command::new(python());
    browser
        .arg(&script)
        .args(["--base", &serve.base, "--admin-token", ADMIN_TOKEN])
        .args(["--github-token", GITHUB_TOKEN, "--chromium"])
        .arg(&chromium)
        .arg("--chromedriver")
        .arg(&chromedriver)
        .arg("--screenshot-dir")
        .arg(&shots);
    let summary = browser_summary(browser, &serve).await;
    assert_eq!(summary["ok"], true, "{summary}");

    let copy_to = std::env::var_os("SCOUT_CONSOLE_SCREENSHOT_DIR").map(std::path::PathBuf::from);
    for (width, height) in [(1366u32, 768u32), (1440, 900)] {
        let size = format!("{width}x{height}");
        let seen = &summary["sizes"][&size];
        let number = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
        assert_eq!(seen["inner"], serde_json::json!([width, height]), "{seen}");
        assert_eq!(seen["scroll"], serde_json::json!([0, 0]), "{seen}");
        let cards = seen["cards"].as_array().unwrap();
        assert_eq!(cards.len(), 3, "{seen}");
        for card in cards {
            for button in ["approve", "deny"] {
                let rect = &card[button];
                assert!(
                    number(&rect["top"]) >= 0.0
                        && number(&rect["left"]) >= 0.0
                        && number(&rect["bottom"]) <= f64::from(height)
                        && number(&rect["right"]) <= f64::from(width),
                    "{button} of card {} inside {size}: {rect}",
                    card["id"]
                );
                assert_eq!(card[format!("{button}_drawn")], true, "{seen}");
            }
        }
        assert_eq!(seen["approvals_first_in_document"], true, "{seen}");
        assert!(
            number(&seen["admin"]["top"]) >= number(&seen["approvals_list"]["bottom"]),
            "the panels below the approvals: {seen}"
        );
        // The screenshot is of the viewport: its size is the viewport's.
        let name = format!("console-{size}.png");
        let png = std::fs::read(shots.join(&name)).expect("the screenshot was taken");
        assert_eq!(png_size(&png), Some((width, height)), "{name}");
        let below = format!("console-{size}-below.png");
        let scrolled = std::fs::read(shots.join(&below)).expect("the screenshot below was taken");
        assert_eq!(png_size(&scrolled), Some((width, height)), "{below}");
        if let Some(to) = &copy_to {
            std::fs::create_dir_all(to).unwrap();
            std::fs::write(to.join(&name), &png).unwrap();
            std::fs::write(to.join(&below), &scrolled).unwrap();
        }
    }

    // The click on Approve made that write, and only it.
    assert!(
        github
            .branch_sha("octo", "hello", "scout/layout-first")
            .is_some()
    );
    assert!(
        github
            .branch_sha("octo", "hello", "scout/layout-second")
            .is_none()
    );
    let writes: Vec<_> = github
        .requests()
        .into_iter()
        .filter(|r| r.method != "GET")
        .collect();
    assert_eq!(writes.len(), 1, "only the approved write reached GitHub");
    assert!(String::from_utf8_lossy(&writes[0].body).contains("scout/layout-first"));
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The page's side of [`the_console_shows_hidden_characters_visibly_and_warns`]:
/// a person signs in and reads the approval the client waits on, whose
/// arguments hold a right-to-left override, a zero-width space and a
/// Cyrillic `о`; prints what the page shows of it (its DOM text, so nothing
/// a renderer hides is missed), then denies it there.
const HIDDEN_CHARACTERS_PY: &str = r##"
import asyncio, json, sys, time
from scout_mcp import Mcp, text_of
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from urllib.request import Request, urlopen

base, admin_token, github_token, chromium, chromedriver = sys.argv[1:6]

def admin(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = Request(base + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + admin_token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"null")

async def until(what, probe, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        await asyncio.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)

async def main():
    admin("PUT", "/v1/brands/acme/connections/github", {"secret": github_token})
    for t in admin("GET", "/v1/reviews")["connectors"]["github"]:
        admin("POST", "/v1/reviews", {"connector": "github", "tool": t["tool"], "digest": t["digest"]})
    chat = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking", "--window-size=1280,800"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    text = lambda element: driver.execute_script("return arguments[0].textContent", element)
    try:
        driver.get(base + "/console")
        await until("the sign-in form", lambda: driver.find_element(By.ID, "sign-in").is_displayed())
        driver.find_element(By.ID, "token").send_keys(admin_token)
        driver.find_element(By.ID, "sign-in-button").click()
        await until("the console", lambda: driver.find_element(By.ID, "console").is_displayed())
        async with Mcp(chat["mcp"]["github"], chat["token"]) as s:
            args = {"owner": "\u043ecto", "repo": "hel\u200blo", "branch": "docs-\u202egnp.tset"}
            call = asyncio.create_task(s.call_tool("github_create_branch", args))
            item = await until("the waiting write on the page", lambda: next(iter(
                driver.find_elements(By.CSS_SELECTOR, "#approvals li.approval")), None))
            warning = item.find_element(By.CSS_SELECTOR, ".shown-warning")
            (pending,) = admin("GET", "/v1/approvals?session=" + chat["id"])["pending"]
            shown = {
                "arguments": text(item.find_element(By.CSS_SELECTOR, ".arguments")),
                "card": text(item),
                "visible": item.text,
                "warning_displayed": warning.is_displayed(),
                "warning": warning.text,
                "digest": text(item.find_element(By.CSS_SELECTOR, ".digest")),
                "arguments_text": pending["arguments_text"],
                "args_digest": pending["args_digest"],
            }
            item.find_element(By.CSS_SELECTOR, "button.deny").click()
            result = await asyncio.wait_for(call, 30)
            shown["refused"] = result.is_error and "approval" in text_of(result)
    finally:
        driver.quit()
    print(json.dumps(shown))

asyncio.run(main())
"##;

/// Arguments that read as other text (a branch that reads `docs-test.png`,
/// an owner that reads `octo`) are shown in the page with every such
/// character made visible, under a warning; the person denies what they
/// now see, and nothing reaches GitHub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_hidden_characters_visibly_and_warns() {
    let Some((chromium, chromedriver)) = scout_tests::chromium() else {
        return;
    };
    let (github, serve, dir) = serve("console-shown").await;
    let base = serve.base.clone();
    let client_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client");
    let mut browser = Command::new(python());
    browser
        .args(["-c", HIDDEN_CHARACTERS_PY])
        .args([&base, ADMIN_TOKEN, GITHUB_TOKEN])
        .arg(&chromium)
        .arg(&chromedriver)
        .env("PYTHONPATH", &client_dir);
    let page = browser_summary(browser, &serve).await;
    let text = |key: &str| page[key].as_str().unwrap_or_default().to_string();

    // Each hidden character shown by its code point and name, in the
    // canonical order of the text the digest is of.
    assert_eq!(
        text("arguments"),
        "{\"branch\":\"docs-⟦U+202E RIGHT-TO-LEFT OVERRIDE⟧gnp.tset\",\
         \"owner\":\"⟦U+043E CYRILLIC LETTER⟧cto\",\
         \"repo\":\"hel⟦U+200B ZERO WIDTH SPACE⟧lo\"}",
        "{page}"
    );
    assert_eq!(page["warning_displayed"], true, "{page}");
    assert!(
        text("warning").starts_with("Warning: these arguments hold")
            && text("warning").contains("⟦U+…⟧"),
        "{page}"
    );
    for hidden in ['\u{202E}', '\u{200B}', '\u{43E}'] {
        assert!(
            !text("card").contains(hidden) && !text("visible").contains(hidden),
            "the page shows no raw U+{:04X}: {page}",
            u32::from(hidden)
        );
    }
    // What the person approves is still bound to the characters themselves.
    assert_eq!(
        text("arguments_text"),
        "{\"branch\":\"docs-\u{202E}gnp.tset\",\"owner\":\"\u{43E}cto\",\"repo\":\"hel\u{200B}lo\"}"
    );
    assert_eq!(text("digest"), text("args_digest"));
    assert_eq!(page["refused"], true, "denied in the page: {page}");
    assert!(
        github.requests().iter().all(|r| r.method == "GET"),
        "nothing written upstream"
    );
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The page's side of [`a_person_connects_a_brand_from_the_console`]: an
/// admin signs in, names the brand, picks the remote server and clicks
/// Connect; the authorization page opens apart (the fixture's server allows
/// at once, as a person clicking "Allow" would) and sends the browser back to
/// the host's callback; prints what that page says.
const CONNECT_PY: &str = r##"
import json, sys, time
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

base, admin_token, chromium, chromedriver = sys.argv[1:5]

def until(what, probe, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)

options = webdriver.ChromeOptions()
options.binary_location = chromium
for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--disable-background-networking", "--disable-sync"]:
    options.add_argument(flag)
driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
try:
    driver.get(base + "/console")
    until("the sign-in form", lambda: driver.find_element(By.ID, "sign-in").is_displayed())
    driver.find_element(By.ID, "token").send_keys(admin_token)
    driver.find_element(By.ID, "sign-in-button").click()
    until("the connect pane", lambda: driver.find_element(By.ID, "connect-pane").is_displayed())
    servers = [o.text for o in Select(driver.find_element(By.ID, "connect-connector")).options]
    driver.find_element(By.ID, "connect-brand").send_keys("acme")
    Select(driver.find_element(By.ID, "connect-connector")).select_by_value("tracker")
    console = driver.current_window_handle
    driver.find_element(By.ID, "connect-button").click()
    until("the authorization link", lambda: driver.find_element(By.ID, "connect-link").is_displayed())
    outcome = driver.find_element(By.ID, "connect-outcome").text
    # The page opens the authorization page itself; where a popup blocker
    # stops that, the person follows the link it shows.
    try:
        until("the authorization window", lambda: len(driver.window_handles) > 1, seconds=5)
    except AssertionError:
        driver.find_element(By.ID, "connect-link").click()
        until("the authorization window", lambda: len(driver.window_handles) > 1)
    other = [h for h in driver.window_handles if h != console][0]
    driver.switch_to.window(other)
    until("the host's answer", lambda: "/v1/oauth/callback" in driver.current_url
          and driver.find_element(By.TAG_NAME, "h1").text)
    print(json.dumps({
        "servers": servers,
        "outcome": outcome,
        "landed_on": driver.current_url.split("?")[0],
        "title": driver.find_element(By.TAG_NAME, "h1").text,
        "text": driver.find_element(By.TAG_NAME, "body").text,
    }))
finally:
    driver.quit()
"##;

/// A person connects a brand to a remote MCP server that takes OAuth from
/// the console: Connect opens the server's authorization page, which sends
/// the browser back to the host, and the brand's connection is stored as
/// an OAuth grant, shown nowhere.
/// Without `[oidc] console_client_id` the page offers no identity
/// provider, and the host redeems nothing for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_console_client_the_host_redeems_nothing() {
    let (_github, serve, dir) = serve("console-no-idp").await;
    let http = reqwest::Client::new();
    let told: serde_json::Value = http
        .get(format!("{}/console/sign-in", serve.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(told, serde_json::json!({"oidc": null}));
    let response = http
        .post(format!("{}/console/token", serve.base))
        .json(&serde_json::json!({"grant_type": "refresh_token", "refresh_token": "r"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_connects_a_brand_from_the_console() {
    let Some((chromium, chromedriver)) = scout_tests::chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let upstream = crate::remote_mcp::oauth_server(dir.path(), 3600).await;
    let config = scout_tests::serve::write_config(
        dir.path(),
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\ndeployment_owner_brand = \"acme\"\n\
             [connectors.tracker]\nmcp = \"http://127.0.0.1:{}/mcp\"\ncredential = \"bearer\"\nallow_private_network = true\n",
            upstream.port
        ),
    );
    let serve = common::serve_as(&config, ADMIN_TOKEN, "6d")
        .current_dir(dir.path())
        .start();
    let mut browser = Command::new(python());
    browser
        .args(["-c", CONNECT_PY])
        .args([&serve.base, ADMIN_TOKEN])
        .arg(&chromium)
        .arg(&chromedriver);
    let page = browser_summary(browser, &serve).await;
    assert_eq!(page["servers"], serde_json::json!(["tracker"]), "{page}");
    assert!(
        page["outcome"]
            .as_str()
            .unwrap_or_default()
            .contains("within ten minutes"),
        "{page}"
    );
    assert_eq!(
        page["landed_on"],
        format!("{}/v1/oauth/callback", serve.base).as_str()
    );
    assert_eq!(page["title"], "Connected", "{page}");
    assert!(
        page["text"]
            .as_str()
            .unwrap_or_default()
            .contains("acme is connected to tracker"),
        "{page}"
    );
    // Stored as the brand's own connection; the page showed none of it.
    let connections: serde_json::Value = serde_json::from_str(
        &reqwest::Client::new()
            .get(format!("{}/v1/brands/acme/connections", serve.base))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    let tracker = connections["connections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["connector"] == "tracker")
        .unwrap_or_else(|| panic!("{connections}"));
    assert_eq!(tracker["source"], "own", "{connections}");
    let stats: serde_json::Value = serde_json::from_str(
        &reqwest::get(format!("http://127.0.0.1:{}/stats", upstream.port))
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(stats["code_exchanges"], 1, "{stats}");
    for token in stats["issued"].as_array().unwrap() {
        assert!(
            !page.to_string().contains(token.as_str().unwrap()),
            "a token on the page"
        );
    }
}

/// The OpenID Connect provider of `tests/idp/issuer.mjs` (panva's
/// `oidc-provider`) on a loopback port, killed when dropped; every line it
/// prints is kept.
struct Provider {
    child: std::process::Child,
    issuer: String,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Provider {
    fn start(
        port: u16,
        redirect_uri: &str,
        token_ttl: u64,
        accounts: &serde_json::Value,
    ) -> Provider {
        use std::io::BufRead;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/idp/issuer.mjs");
        let mut child = Command::new("node")
            .arg(&script)
            .env("OIDC_PROVIDER", scout_tests::oidc_provider())
            .env("PORT", port.to_string())
            .env("REDIRECT_URI", redirect_uri)
            .env("TOKEN_TTL", token_ttl.to_string())
            .env("ACCOUNTS", accounts.to_string())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("node runs the provider");
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        let kept = lines.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if line.contains("\"listening\"") {
                    let _ = tx.send(());
                }
                kept.lock().unwrap().push(line);
            }
        });
        rx.recv_timeout(crate::common::EVENTUALLY)
            .expect("the provider says it listens");
        Provider {
            child,
            issuer: format!("http://127.0.0.1:{port}"),
            lines,
        }
    }

    /// How many tokens it issued by `grant_type`.
    fn grants(&self, grant_type: &str) -> usize {
        let wanted = serde_json::json!({ "grant": grant_type }).to_string();
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| **l == wanted)
            .count()
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The console signs in with a real OpenID Connect provider (authorization
/// code + PKCE, through the provider's own login page), shows the person's
/// e-mail and only their brand's writes, refreshes its token while a write
/// waits, keeps the write in view when the sign-in ends and asks to sign in
/// again, and the person then approves it: GitHub sees that write and not
/// the other brand's, and the trace records her e-mail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_signs_in_with_the_identity_provider_and_keeps_a_waiting_write_in_view() {
    use super::crash_safety::{ADMIN_TOKEN as ADMIN, Admin, GITHUB_TOKEN as GITHUB, ok_text};
    use reqwest::Method;
    use serde_json::json;
    let Some((chromium, chromedriver)) = scout_tests::chromium() else {
        return;
    };
    const TTL: u64 = 6;
    let idp_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let github = FakeGitHub::start(GITHUB).await;
    // No jwks_url: the keys are found through the discovery document.
    let (dir, config) = scout_tests::serve::fresh_config(
        "console-oidc",
        &(scout_tests::serve_config_for_github(&github.origin())
            + &format!(
                "\n[oidc]\nissuer = \"http://127.0.0.1:{idp_port}\"\naudience = \"scout-console\"\nconsole_client_id = \"scout-console\"\nconsole_scope = \"openid email scout\"\nrole_claim = \"scout_roles\"\nsubject_claim = \"email\"\nleeway_secs = 0\njwks_min_refresh_secs = 1\nallow_private_network = true\n"
            )),
    );
    let serve = common::serve_as(&config, ADMIN, "6d")
        .current_dir(&dir)
        .env("GITHUB_ALLOW_WRITES", "true")
        .env("APPROVAL_TIMEOUT_MS", "120000")
        .start();
    let provider = Provider::start(
        idp_port,
        &format!("{}/console/", serve.base),
        TTL,
        &json!({"alice": {"email": "alice@acme.example", "scout_roles": ["approver:acme"]}}),
    );

    // A write waiting in acme and one in globex.
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    admin.set_up().await;
    let (status, _) = admin
        .request(
            Method::PUT,
            "/v1/brands/globex/connections/github",
            Some(json!({"secret": GITHUB})),
        )
        .await;
    assert_eq!(status, 200);
    let mut waiting = Vec::new();
    let mut approvals = Vec::new();
    for brand in ["acme", "globex"] {
        let (status, view) = admin
            .request(
                Method::POST,
                "/v1/sessions",
                Some(json!({"brand": brand, "role": "person-chat"})),
            )
            .await;
        assert_eq!(status, 201, "{view}");
        let session = view["id"].as_str().unwrap().to_string();
        let (call, pending) = admin
            .write_waiting(
                &view,
                json!({"owner": "octo", "repo": "hello", "branch": format!("scout/{brand}"), "from": "main"}),
            )
            .await;
        waiting.push(call);
        approvals.push((session, pending["id"].as_i64().unwrap()));
    }

    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/console_sign_in.py");
    let mut browser = Command::new(python());
    browser
        .arg(&script)
        .args(["--base", &serve.base, "--issuer", &provider.issuer])
        .args([
            "--acme",
            &approvals[0].1.to_string(),
            "--globex",
            &approvals[1].1.to_string(),
        ])
        .args(["--token-ttl", &TTL.to_string(), "--chromium"])
        .arg(&chromium)
        .arg("--chromedriver")
        .arg(&chromedriver);
    let summary = browser_summary(browser, &serve).await;
    assert_eq!(
        summary["approved_by"], "approved by alice@acme.example",
        "{summary}"
    );

    // What the page is told, and what the host's token endpoint refuses.
    let told: serde_json::Value = http
        .get(format!("{}/console/sign-in", serve.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(told["oidc"]["client_id"], "scout-console");
    assert_eq!(
        told["oidc"]["authorization_endpoint"],
        format!("{}/auth", provider.issuer),
        "from the discovery document"
    );
    let redeem = async |body: serde_json::Value| {
        let response = http
            .post(format!("{}/console/token", serve.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (
            status,
            response
                .json::<serde_json::Value>()
                .await
                .unwrap_or_default(),
        )
    };
    let verifier = "v".repeat(43);
    let (status, body) = redeem(json!({"grant_type": "authorization_code", "code": "made-up", "code_verifier": verifier, "redirect_uri": format!("{}/console/", serve.base)})).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (401, Some("sign_in_refused")),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("invalid_grant"),
        "{body}"
    );
    let (status, body) =
        redeem(json!({"grant_type": "refresh_token", "refresh_token": "made-up"})).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (401, Some("sign_in_refused")),
        "{body}"
    );
    let (status, body) = redeem(json!({"grant_type": "authorization_code", "code": "c", "code_verifier": "short", "redirect_uri": "x"})).await;
    assert_eq!(status, 400, "a verifier RFC 7636 does not allow: {body}");
    let (status, _) =
        redeem(json!({"grant_type": "password", "username": "alice", "password": "x"})).await;
    assert_eq!(status, 400, "only the two grants are forwarded");

    // Two sign-ins, each a code redeemed; at least one refresh between them.
    assert_eq!(
        provider.grants("authorization_code"),
        2,
        "{:?}",
        provider.lines.lock().unwrap()
    );
    assert!(
        provider.grants("refresh_token") >= 1,
        "{:?}",
        provider.lines.lock().unwrap()
    );
    let reply = tokio::time::timeout(crate::common::EVENTUALLY, waiting.remove(0))
        .await
        .expect("acme's write ends")
        .unwrap()
        .unwrap();
    assert!(ok_text(&reply).is_some(), "{reply}");
    assert!(github.branch_sha("octo", "hello", "scout/acme").is_some());
    assert!(
        github.branch_sha("octo", "hello", "scout/globex").is_none(),
        "globex's write waits"
    );
    let decided: Vec<_> = admin
        .trace("acme")
        .await
        .into_iter()
        .filter(|e| {
            e.state == scout_host::store::TraceState::Decided && e.session == approvals[0].0
        })
        .collect();
    assert_eq!(decided.len(), 1);
    assert_eq!(
        decided[0].detail["by"],
        "alice@acme.example (approvals API)"
    );
    let (status, _) = admin
        .request(
            Method::POST,
            &format!("/v1/approvals/{}", approvals[1].1),
            Some(json!({"approve": false})),
        )
        .await;
    assert_eq!(status, 200);
    let _ = std::fs::remove_dir_all(&dir);
}
