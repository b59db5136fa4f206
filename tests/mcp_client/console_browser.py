"""The approvals console in a real browser: headless Chromium, driven through
its ChromeDriver by Selenium, while the official MCP client waits on a write.

Driven by host/tests/all/console.rs, which starts a fake GitHub API and the
real `scout-host serve` binary, then runs:

    python3 console_browser.py --base URL --admin-token T --github-token G \
        --chromium /usr/bin/chromium --chromedriver /usr/bin/chromedriver [--screenshot PNG]

A person signs in, sees the write the client waits on (tool, connector,
role, brand, the exact arguments and their digest), clicks Approve and the
call completes; clicks Deny on a second write and the call is refused; an
approval decided elsewhere leaves the page by itself. Every step asserts what
it names; the script prints one JSON summary line on success, and the Rust
test checks the fake GitHub's side.
"""

import argparse
import asyncio
import hashlib
import json
import sys
import urllib.error
import urllib.request

from scout_mcp import Mcp, text_of
from headless import browser, check, until, viewport
from selenium.webdriver.common.by import By

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--base", required=True)
ARGS.add_argument("--admin-token", required=True)
ARGS.add_argument("--github-token", required=True)
ARGS.add_argument("--chromium", required=True)
ARGS.add_argument("--chromedriver", required=True)
ARGS.add_argument("--screenshot")
ARGS.add_argument("--approval-screenshot")
OPTS = ARGS.parse_args()


def admin(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(OPTS.base + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {OPTS.admin_token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def card(driver, branch):
    """The page's approval card whose arguments name `branch`, if shown."""
    for item in driver.find_elements(By.CSS_SELECTOR, "#approvals li.approval"):
        if branch in item.find_element(By.CSS_SELECTOR, ".arguments").get_attribute("textContent"):
            return item
    return None


async def main():
    summary = {}
    # The operator's side, once: a connection, the tools reviewed, a person chat.
    status, _ = admin("PUT", "/v1/brands/acme/connections/github", {"secret": OPTS.github_token})
    check(status == 200, f"connection stored: {status}")
    _, reviews = admin("GET", "/v1/reviews")
    for t in reviews["connectors"]["github"]:
        status, _ = admin("POST", "/v1/reviews", {"connector": "github", "tool": t["tool"], "digest": t["digest"]})
        check(status == 200, "review approved")
    status, chat = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
    check(status == 201, f"person chat session: {status} {chat}")

    driver = browser(OPTS.chromium, OPTS.chromedriver)
    try:
        # A laptop's browser: its screenshot is README's picture.
        viewport(driver, 1366, 768)
        # --- the page and its headers ---
        with urllib.request.urlopen(OPTS.base + "/console", timeout=30) as resp:
            csp = resp.headers.get("Content-Security-Policy", "")
            check("script-src 'self'" in csp and "frame-ancestors 'none'" in csp, f"the console's CSP: {csp}")
            check(resp.headers.get("X-Frame-Options") == "DENY", "no framing")
            check(resp.headers.get("Set-Cookie") is None, "the console sets no cookie")

        # --- sign in: a wrong token is refused, the admin token accepted ---
        driver.get(OPTS.base + "/console")
        await until("the sign-in form", lambda: driver.find_element(By.ID, "sign-in").is_displayed())
        driver.find_element(By.ID, "token").send_keys("not-the-admin-token")
        driver.find_element(By.ID, "sign-in-button").click()
        await until("the refusal", lambda: "not accepted" in driver.find_element(By.ID, "sign-in-error").text)
        check(not driver.find_element(By.ID, "console").is_displayed(), "nothing shown to a wrong token")
        driver.find_element(By.ID, "token").send_keys(OPTS.admin_token)
        driver.find_element(By.ID, "sign-in-button").click()
        await until("the console", lambda: driver.find_element(By.ID, "console").is_displayed())
        check(driver.find_element(By.ID, "who-subject").text == "admin-token", "signed in as the admin token")
        check(driver.find_element(By.ID, "empty").is_displayed(), "nothing waiting yet")
        check(driver.get_cookies() == [], "no cookie in the browser")

        async with Mcp(chat["mcp"]["github"], chat["token"]) as s:
            # --- a write the client waits on, approved in the browser ---
            approved_args = {"owner": "octo", "repo": "hello", "branch": "scout/console-approved"}
            call = asyncio.create_task(s.call_tool("github_create_branch", approved_args))
            item = await until("the waiting write on the page", lambda: card(driver, "scout/console-approved"))
            # The exact text is folded under the structured view: read it whole.
            shown = item.find_element(By.CSS_SELECTOR, ".arguments").get_attribute("textContent")
            digest = item.find_element(By.CSS_SELECTOR, ".digest").get_attribute("textContent")
            check(hashlib.sha256(shown.encode()).hexdigest() == digest,
                  f"the arguments shown are the bytes the approval is bound to: {shown} {digest}")
            check(json.loads(shown) == approved_args, f"the exact arguments: {shown}")
            check(item.find_element(By.CSS_SELECTOR, ".tool").text == "mcp__github__github_create_branch", "the tool")
            check(item.find_element(By.CSS_SELECTOR, ".connector").text == "github", "the connector")
            check(item.find_element(By.CSS_SELECTOR, ".role").text == "person-chat", "the session's role")
            check(item.find_element(By.CSS_SELECTOR, ".brand").text == "acme", "the session's brand")
            check(item.find_element(By.CSS_SELECTOR, ".session").text == chat["id"], "the session")
            await until("the wait counting", lambda: "waiting" in item.find_element(By.CSS_SELECTOR, ".waited").text)
            check(driver.find_element(By.ID, "pending-count").text == "1", "one waiting")
            check(not call.done(), "the client is still waiting")

            # The session's trace beside it, with the request that waits.
            item.find_element(By.CSS_SELECTOR, ".session").click()
            await until("the session's trace", lambda: any(
                "requested" == r.find_element(By.CSS_SELECTOR, "td.state").text
                for r in driver.find_elements(By.CSS_SELECTOR, "#trace-rows tr.event")))
            # The session's set-up (the rows before its first call) is folded
            # under one line that counts it; a click opens and closes it.
            _, traced = admin("GET", f"/v1/trace?session={chat['id']}")
            set_up = []
            for e in traced["events"]:
                if e.get("call_id") != "session" and e.get("rule") != "session_opened":
                    break
                set_up.append(e)
            check(len(set_up) >= 3, f"the session's set-up rows: {traced}")
            toggle = driver.find_element(By.CSS_SELECTOR, "#trace-rows tr.setup-summary button")
            check(f"Session set-up: {len(set_up)} rows" in toggle.text, f"the fold counts them: {toggle.text}")
            folded = driver.find_elements(By.CSS_SELECTOR, "#trace-rows tr.setup")
            check(len(folded) == len(set_up) and not any(r.is_displayed() for r in folded),
                  f"the set-up rows are folded: {len(folded)} of {len(set_up)}")
            check(driver.find_elements(By.CSS_SELECTOR, "#trace-rows tr")[-len(set_up) - 1] ==
                  driver.find_element(By.CSS_SELECTOR, "#trace-rows tr.setup-summary"),
                  "the fold sits above the set-up, below the calls")
            toggle.click()
            await until("the set-up opened", lambda: all(r.is_displayed() for r in folded) or None)
            toggle.click()
            await until("the set-up folded again", lambda: not any(r.is_displayed() for r in folded) or None)
            if OPTS.screenshot:
                driver.save_screenshot(OPTS.screenshot)

            item.find_element(By.CSS_SELECTOR, "button.approve").click()
            result = await asyncio.wait_for(call, 30)
            check(not result.is_error, f"the approved write ran: {text_of(result)}")
            await until("the decision on the card",
                        lambda: "approved by admin-token" in item.find_element(By.CSS_SELECTOR, ".outcome").text)
            await until("the card leaving", lambda: card(driver, "scout/console-approved") is None)
            summary["approved"] = approved_args["branch"]
            # The person's own decisions, kept in view after the card left.
            decision = await until("the decision in the history", lambda: next(iter(
                driver.find_elements(By.CSS_SELECTOR, "#decisions li.decision")), None))
            check("approved" in decision.text and "github_create_branch" in decision.text,
                  f"the history names the decision: {decision.text}")

            # --- a second write, denied in the browser ---
            call = asyncio.create_task(s.call_tool("github_create_branch", {
                "owner": "octo", "repo": "hello", "branch": "scout/console-denied"}))
            item = await until("the second write", lambda: card(driver, "scout/console-denied"))
            item.find_element(By.CSS_SELECTOR, "button.deny").click()
            result = await asyncio.wait_for(call, 30)
            check(result.is_error and "approval" in text_of(result), f"the denied write is refused: {text_of(result)}")
            await until("the card leaving", lambda: card(driver, "scout/console-denied") is None)
            summary["denied"] = "scout/console-denied"

            # --- decided elsewhere: the page follows by itself ---
            call = asyncio.create_task(s.call_tool("github_create_branch", {
                "owner": "octo", "repo": "hello", "branch": "scout/api-approved"}))
            await until("the third write", lambda: card(driver, "scout/api-approved"))
            _, listed = admin("GET", f"/v1/approvals?session={chat['id']}")
            (pending,) = listed["pending"]
            status, reply = admin("POST", f"/v1/approvals/{pending['id']}", {"approve": True})
            check(status == 200, f"approved through the API: {status} {reply}")
            result = await asyncio.wait_for(call, 30)
            check(not result.is_error, f"the write approved elsewhere ran: {text_of(result)}")
            await until("the page dropping it", lambda: card(driver, "scout/api-approved") is None)
            check(driver.find_element(By.ID, "empty").is_displayed(), "nothing waiting again")

            # --- a commit a person can judge: its files as files, its facts ---
            readme = "# Hello\n\nThis repository says hello.\n\n## Usage\n\n    hello --name world\n"
            long_text = "\n".join(f"line {i}: the configuration value number {i} is kept as it was" for i in range(40))
            files = [{"path": "README.md", "content": readme}, {"path": "config/values.txt", "content": long_text}]
            call = asyncio.create_task(s.call_tool("github_commit_files", {
                "owner": "octo", "repo": "hello", "branch": "scout/console-approved",
                "message": "Document usage", "files": files}))
            item = await until("the commit on the page", lambda: card(driver, "Document usage"))
            paths = [p.text for p in item.find_elements(By.CSS_SELECTOR, ".file-path")]
            check(paths == ["README.md", "config/values.txt"], f"each file under its path: {paths}")
            blocks = item.find_elements(By.CSS_SELECTOR, ".file .text-block")
            check(blocks[0].get_attribute("textContent") == readme, "the file's text as it is, line breaks kept")
            check(blocks[1].get_attribute("textContent") == long_text, "a long file folded, and complete")
            check(not blocks[1].is_displayed() and item.find_element(By.CSS_SELECTOR, ".file details summary").is_displayed(),
                  "the long file is folded under a summary line")
            check(item.find_element(By.CSS_SELECTOR, ".description").text.startswith("Commit"),
                  f"what the tool does: {item.find_element(By.CSS_SELECTOR, '.description').text}")
            check(item.find_element(By.CSS_SELECTOR, ".effect").text == "write", "that it writes")
            reaches = item.find_element(By.CSS_SELECTOR, ".reaches").text
            check("git/trees" in reaches and "127.0.0.1" in reaches, f"what it may reach, and where: {reaches}")
            await until("the time left", lambda: "refused unanswered in" in item.find_element(By.CSS_SELECTOR, ".refused-in").text)
            check(not item.find_element(By.CSS_SELECTOR, ".digest").is_displayed(), "the digest kept small, folded")
            recent = item.find_element(By.CSS_SELECTOR, ".recent").get_attribute("textContent")
            check("github_create_branch" in recent, f"the session's latest requests: {recent}")
            if OPTS.approval_screenshot:
                viewport(driver, 1366, 1400)
                driver.execute_script("arguments[0].scrollIntoView();", item)
                item.screenshot(OPTS.approval_screenshot)
            item.find_element(By.CSS_SELECTOR, "button.deny").click()
            result = await asyncio.wait_for(call, 30)
            check(result.is_error, "the commit was denied")
            await until("the commit leaving", lambda: card(driver, "Document usage") is None)
            summary["judged"] = paths

        # --- a session paused by repeated refusals, resumed in the browser ---
        status, pausing = admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})
        check(status == 201, f"another session: {status}")
        async with Mcp(pausing["mcp"]["github"], pausing["token"]) as s:
            for spelling in ["github_delete_repo", "github_delete_repository", "github_remove_repo"]:
                try:
                    await s.call_tool(spelling, {"owner": "octo", "repo": "hello"})
                except Exception:
                    pass  # refused: not offered
        _, shown = admin("GET", f"/v1/sessions/{pausing['id']}")
        check(shown.get("paused") is True, f"paused after three refusals of one consequence: {shown}")
        row = await until("the paused session on the page", lambda: next(
            (r for r in driver.find_elements(By.CSS_SELECTOR, "#paused li.paused")
             if r.find_element(By.CSS_SELECTOR, ".session").text == pausing["id"]), None))
        row.find_element(By.CSS_SELECTOR, "button.resume").click()
        await until("the resumption", lambda: admin("GET", f"/v1/sessions/{pausing['id']}")[1].get("paused") is None)
        await until("the row leaving", lambda: not any(
            r.find_element(By.CSS_SELECTOR, ".session").text == pausing["id"]
            for r in driver.find_elements(By.CSS_SELECTOR, "#paused li.paused")))

        # --- a capability request, answered in the browser; nothing granted ---
        async with Mcp(pausing["mcp"]["scout"], pausing["token"]) as s:
            parked = await s.call_tool("scout_request_capability", {
                "goal": "delete the stale repo", "missing_observation": "no delete tool",
                "proposed_effect": "write", "safe_alternative_tried": "listed its branches"})
            request = parked.structured_content["request"]
            item = await until("the capability request on the page", lambda: next(
                (r for r in driver.find_elements(By.CSS_SELECTOR, "#capabilities li.capability")
                 if r.get_attribute("data-id") == str(request)), None))
            check(item.find_element(By.CSS_SELECTOR, ".goal").text == "delete the stale repo", "the goal shown")
            item.find_element(By.CSS_SELECTOR, "textarea.answer").send_keys("No: archive it instead.")
            item.find_element(By.CSS_SELECTOR, "button.send").click()
            read = None
            for _ in range(100):
                read = await s.call_tool("scout_request_capability", {"request": request})
                if read.structured_content.get("answer"):
                    break
                await asyncio.sleep(0.1)
            check(read.structured_content["answer"] == "No: archive it instead.", f"the agent reads the answer: {read}")
            check(read.structured_content["answered_by"] == "admin-token (admin API)", "who answered")

        # Signing out leaves nothing of what the last person saw in the page.
        driver.find_element(By.ID, "sign-out").click()
        await until("the sign-in form after signing out",
                    lambda: driver.find_element(By.ID, "sign-in").is_displayed() or None)
        left = {list_id: len(driver.find_elements(By.CSS_SELECTOR, f"#{list_id} > *"))
                for list_id in ["approvals", "paused", "capabilities", "trace-rows"]}
        check(all(n == 0 for n in left.values()), f"every list cleared on sign-out: {left}")

        # Who decided, in the trace: the verified caller, through the API.
        _, trace = admin("GET", f"/v1/trace?session={chat['id']}")
        decided = [e for e in trace["events"] if e["state"] == "decided"]
        check(len(decided) == 4, f"four decisions traced: {decided}")
        check(all("admin-token (approvals API)" in json.dumps(e["detail"]) for e in decided),
              f"each names who decided: {decided}")
        summary["ok"] = True
    finally:
        driver.quit()
    print(json.dumps(summary))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
