"""The approvals console at common laptop sizes: the waiting approvals come
first, each with its Approve and Deny in view without scrolling.

Driven by host/tests/all/console.rs, which starts a fake GitHub API and the
real `scout-host serve` binary, then runs:

    python3 console_layout.py --base URL --admin-token T --github-token G \
        --chromium PATH --chromedriver PATH --screenshot-dir DIR

Three writes wait for a person (a branch, a commit whose arguments are long,
another branch), with what the page shows below them: a paused session and a
capability request. At each viewport (1366x768, then 1440x900: the window's
inner size, the browser's own chrome added to the window, see
`headless.viewport`) a person signs in; the script asserts that every
card's Approve and Deny lie inside the viewport with the page unscrolled,
and are what is drawn at their centre; that the approvals come before the
panels below in the document, on screen and in focus order; and saves a
screenshot of the viewport (`DIR/console-WxH.png`, and `-below.png` scrolled
to the panels below). Then the person approves
the first branch and denies the rest. The script prints one JSON summary
line (the measurements included) on success; the Rust test checks them
again, the screenshots' sizes and the fake GitHub's side.
"""

import argparse
import asyncio
import contextlib
import json
import os
import sys

from scout_mcp import Mcp, admin_api, text_of
from headless import browser, check, until, viewport
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--base", required=True)
ARGS.add_argument("--admin-token", required=True)
ARGS.add_argument("--github-token", required=True)
ARGS.add_argument("--chromium", required=True)
ARGS.add_argument("--chromedriver", required=True)
ARGS.add_argument("--screenshot-dir", required=True)
OPTS = ARGS.parse_args()
admin = admin_api(OPTS.base, OPTS.admin_token)

SIZES = [(1366, 768), (1440, 900)]

# Where everything the checks need is, read in one go with the page unscrolled.
MEASURE = """
const box = (e) => { const r = e.getBoundingClientRect();
  return {top: r.top, left: r.left, bottom: r.bottom, right: r.right}; };
const drawn = (e) => { const r = e.getBoundingClientRect();
  const at = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
  return at === e || e.contains(at); };
const shown = (e) => e.getClientRects().length > 0;
const approvals = document.getElementById("approvals-pane");
const admin = document.getElementById("admin");
return {
  inner: [window.innerWidth, window.innerHeight],
  scroll: [window.scrollX, window.scrollY],
  page_width: document.documentElement.scrollWidth,
  cards: Array.from(document.querySelectorAll("#approvals li.approval")).map((li) => {
    const body = li.querySelector(".body");
    return {
      id: li.dataset.id,
      approve: box(li.querySelector("button.approve")),
      deny: box(li.querySelector("button.deny")),
      approve_drawn: drawn(li.querySelector("button.approve")),
      deny_drawn: drawn(li.querySelector("button.deny")),
      details_scroll: body.scrollHeight > body.clientHeight,
      args: li.querySelector(".arguments").textContent,
    };
  }),
  approvals: box(approvals),
  approvals_list: box(document.getElementById("approvals")),
  admin: shown(admin) ? box(admin) : null,
  panes: ["paused-pane", "capabilities-pane"].map((id) => document.getElementById(id))
    .filter(shown).map((e) => ({id: e.id, top: box(e).top})),
  approvals_first_in_document:
    (approvals.compareDocumentPosition(admin) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0,
  elsewhere: document.getElementById("elsewhere").textContent,
};
"""


def card(driver, text):
    """The page's approval card whose exact arguments hold `text`, if shown."""
    for item in driver.find_elements(By.CSS_SELECTOR, "#approvals li.approval"):
        if text in item.find_element(By.CSS_SELECTOR, ".arguments").get_attribute("textContent"):
            return item
    return None


def inside(box, width, height):
    return box["left"] >= 0 and box["top"] >= 0 and box["right"] <= width and box["bottom"] <= height


async def waiting(session_id):
    """The approval a session's call waits on, once it is listed."""
    pending = await until(f"{session_id}'s write waiting", lambda: admin(
        "GET", f"/v1/approvals?session={session_id}")["pending"])
    return pending[0]


async def main():
    summary = {"sizes": {}}
    admin("PUT", "/v1/brands/acme/connections/github", {"secret": OPTS.github_token})
    for t in admin("GET", "/v1/reviews")["connectors"]["github"]:
        admin("POST", "/v1/reviews", {"connector": "github", "tool": t["tool"], "digest": t["digest"]})
    session = lambda: admin("POST", "/v1/sessions", {"brand": "acme", "role": "person-chat"})

    # What the page shows below the approvals: a session paused by repeated
    # refusals, and a capability request.
    pausing = session()
    async with Mcp(pausing["mcp"]["github"], pausing["token"]) as s:
        for spelling in ["github_delete_repo", "github_delete_repository", "github_remove_repo"]:
            with contextlib.suppress(Exception):
                await s.call_tool(spelling, {"owner": "octo", "repo": "hello"})
    check(admin("GET", f"/v1/sessions/{pausing['id']}").get("paused") is True, "a paused session")
    asking = session()
    async with Mcp(asking["mcp"]["scout"], asking["token"]) as s:
        await s.call_tool("scout_request_capability", {
            "goal": "delete the stale repo", "missing_observation": "no delete tool",
            "proposed_effect": "write", "safe_alternative_tried": "listed its branches"})

    # Three writes waiting, each in a session of its own, in this order: a
    # branch, a commit whose arguments are long, another branch.
    long_file = "\n".join(f"line {i}: the configuration value number {i} is kept as it was" for i in range(300))
    long_message = "Regenerate the configuration. " * 60
    writes = [
        ("github_create_branch", {"owner": "octo", "repo": "hello", "branch": "scout/layout-first"}),
        ("github_commit_files", {"owner": "octo", "repo": "hello", "branch": "scout/layout-first",
                                 "message": long_message,
                                 "files": [{"path": "config/values.txt", "content": long_file},
                                           {"path": "config/more.txt", "content": long_file}]}),
        ("github_create_branch", {"owner": "octo", "repo": "hello", "branch": "scout/layout-second"}),
    ]
    marks = ['"branch":"scout/layout-first","owner"', "Regenerate the configuration", "scout/layout-second"]
    async with contextlib.AsyncExitStack() as stack:
        calls = []
        for tool, args in writes:
            chat = session()
            s = await stack.enter_async_context(Mcp(chat["mcp"]["github"], chat["token"]))
            calls.append(asyncio.create_task(s.call_tool(tool, args)))
            await waiting(chat["id"])

        driver = browser(OPTS.chromium, OPTS.chromedriver)
        try:
            for width, height in SIZES:
                # The page loaded afresh at each size, signed in through the form.
                driver.get(OPTS.base + "/console/")
                viewport(driver, width, height)
                await until("the sign-in form", lambda: driver.find_element(By.ID, "sign-in").is_displayed())
                driver.find_element(By.ID, "token").send_keys(OPTS.admin_token)
                driver.find_element(By.ID, "sign-in-button").click()
                await until("three cards", lambda: len(driver.find_elements(
                    By.CSS_SELECTOR, "#approvals li.approval")) == 3)
                await until("the panels below", lambda: driver.find_element(By.ID, "capabilities-pane").is_displayed()
                            and driver.find_element(By.ID, "paused-pane").is_displayed())
                # The page as the person first sees it: not scrolled.
                driver.execute_script("window.scrollTo(0, 0)")
                seen = driver.execute_script(MEASURE)
                size = f"{width}x{height}"
                shot = os.path.join(OPTS.screenshot_dir, f"console-{size}.png")
                check(driver.save_screenshot(shot), f"the screenshot at {size}")

                check(seen["inner"] == [width, height], f"the viewport at {size}: {seen['inner']}")
                check(seen["scroll"] == [0, 0], f"not scrolled: {seen['scroll']}")
                check(seen["page_width"] <= width, f"no sideways scrolling at {size}: {seen['page_width']}")
                # Each write has its card (in the order the approvals API lists them).
                holds = []
                for c in seen["cards"]:
                    args = c.pop("args")
                    holds.append([i for i, m in enumerate(marks) if m in args])
                check(sorted(holds) == [[0], [1], [2]], f"a card for each write: {holds}")
                long_card = seen["cards"][holds.index([1])]
                for c in seen["cards"]:
                    for button in ["approve", "deny"]:
                        check(inside(c[button], width, height),
                              f"card {c['id']}'s {button} inside {size} unscrolled: {c[button]}")
                        check(c[button + "_drawn"], f"card {c['id']}'s {button} is what is drawn there")
                check(long_card["details_scroll"], "the long arguments scroll inside their card")
                lowest = max(max(c["approve"]["bottom"], c["deny"]["bottom"]) for c in seen["cards"])
                check(seen["approvals_first_in_document"], "the approvals come before the panels in the document")
                check(seen["admin"] is not None and seen["admin"]["top"] >= seen["approvals_list"]["bottom"],
                      f"the panels below the approvals on screen: {seen['admin']} {seen['approvals_list']}")
                check(len(seen["panes"]) == 2 and all(p["top"] > lowest for p in seen["panes"]),
                      f"both panels below every button: {seen['panes']}")
                check("1 paused session, 1 capability request" in seen["elsewhere"],
                      f"the approvals say what else waits below: {seen['elsewhere']}")

                # And what is below, scrolled to (for a person to look at).
                driver.execute_script("document.getElementById('admin').scrollIntoView()")
                check(driver.save_screenshot(os.path.join(OPTS.screenshot_dir, f"console-{size}-below.png")),
                      f"the screenshot below at {size}")
                driver.execute_script("window.scrollTo(0, 0)")

                # Focus order: the waiting approvals first; Tab from there is
                # the first card's Approve.
                active = driver.execute_script("return document.activeElement.id")
                check(active == "approvals-heading", f"focus starts at the approvals: {active}")
                ActionChains(driver).send_keys(Keys.TAB).perform()
                first = driver.find_elements(By.CSS_SELECTOR, "#approvals li.approval")[0]
                check(driver.switch_to.active_element == first.find_element(By.CSS_SELECTOR, "button.approve"),
                      "the next Tab is the first card's Approve")
                label = first.find_element(By.CSS_SELECTOR, "button.approve").get_attribute("aria-label")
                named = (first.find_element(By.CSS_SELECTOR, ".tool").text + " in acme, session "
                         + first.find_element(By.CSS_SELECTOR, ".session").text)
                check(label == "Approve " + named, f"the button's name says whose it is: {label}")
                summary["sizes"][size] = {"screenshot": shot, **seen}
                if (width, height) != SIZES[-1]:
                    driver.find_element(By.ID, "sign-out").click()
                    await until("signed out", lambda: driver.find_element(By.ID, "sign-in").is_displayed())

            # Approve the first branch where it is (the page stays unscrolled); deny the rest.
            first = card(driver, marks[0])
            first.find_element(By.CSS_SELECTOR, "button.approve").click()
            scrolled = driver.execute_script("return [window.scrollX, window.scrollY]")
            check(scrolled == [0, 0], f"clicked where it was, nothing scrolled: {scrolled}")
            result = await asyncio.wait_for(calls[0], 30)
            check(not result.is_error, f"the approved write ran: {text_of(result)}")
            await until("the decision on the card",
                        lambda: "approved by admin-token" in first.find_element(By.CSS_SELECTOR, ".outcome").text)
            for i in [1, 2]:
                card(driver, marks[i]).find_element(By.CSS_SELECTOR, "button.deny").click()
                result = await asyncio.wait_for(calls[i], 30)
                check(result.is_error and "approval" in text_of(result), f"write {i} denied: {text_of(result)}")
            await until("the cards leaving", lambda: not driver.find_elements(By.CSS_SELECTOR, "#approvals li.approval"))
            summary["approved"] = "scout/layout-first"
            summary["ok"] = True
        except AssertionError as e:
            # Said here, last: the MCP sessions' teardown under a failure
            # only adds noise (the Rust test ends the host).
            driver.quit()
            print(f"FAILED: {e}", file=sys.stderr, flush=True)
            os._exit(1)
        finally:
            driver.quit()
    print(json.dumps(summary))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
