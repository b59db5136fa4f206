"""The console signs in with a real OpenID Connect provider, in a real browser.

Driven by host/tests/all/console.rs, which starts the provider
(tests/idp/issuer.mjs: panva's oidc-provider on loopback), the real
`scout-host serve` with `[oidc] console_client_id`, and two writes waiting
for a person, one in brand acme and one in brand globex; then runs:

    python3 console_sign_in.py --base URL --issuer URL --acme N --globex N \
        --token-ttl SECONDS --chromium PATH --chromedriver PATH

Alice (`approver:acme`) signs in through the provider's own login page
(authorization code + PKCE); the page shows her e-mail, not her opaque
`sub`, and acme's write only. Her token is refreshed before it expires
while the write waits. Her refresh token is then revoked at the provider
(RFC 7009): when her token expires, the write stays in view with its
buttons off and the page asks her to sign in again; she does, and
approves it. Every step asserts what it names; the script prints one JSON
summary line on success, and the Rust test checks the provider's grants,
GitHub and the trace.
"""

import argparse
import asyncio
import json
import sys
import urllib.parse
import urllib.request

from headless import browser, check, until
from selenium.webdriver.common.by import By

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--base", required=True)
ARGS.add_argument("--issuer", required=True)
ARGS.add_argument("--acme", required=True)
ARGS.add_argument("--globex", required=True)
ARGS.add_argument("--token-ttl", type=int, required=True)
ARGS.add_argument("--chromium", required=True)
ARGS.add_argument("--chromedriver", required=True)
OPTS = ARGS.parse_args()


def shown_ids(driver):
    return [li.get_attribute("data-id") for li in driver.find_elements(By.CSS_SELECTOR, "#approvals li.approval")]


def stored(driver, key):
    return driver.execute_script("return sessionStorage.getItem(arguments[0]);", key)


async def log_in_at_the_provider(driver, who):
    """The provider's own login page (its development interaction)."""
    await until("the provider's login page", lambda: driver.current_url.startswith(OPTS.issuer)
                and driver.find_elements(By.NAME, "login"))
    query = urllib.parse.parse_qs(urllib.parse.urlparse(driver.current_url).query)
    driver.find_element(By.NAME, "login").send_keys(who)
    driver.find_element(By.NAME, "password").send_keys("any password")
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    return query


async def main():
    summary = {}
    driver = browser(OPTS.chromium, OPTS.chromedriver, "1280,900")
    try:
        driver.get(OPTS.base + "/console/")
        button = await until("the identity provider's button",
                             lambda: driver.find_element(By.ID, "idp-sign-in").is_displayed()
                             and driver.find_element(By.ID, "idp-sign-in"))
        check(driver.find_element(By.ID, "idp-issuer").text == OPTS.issuer, "the issuer is named")
        button.click()
        # The request the page made: code flow, PKCE S256, state and nonce.
        await until("the provider", lambda: driver.current_url.startswith(OPTS.issuer))
        first = urllib.parse.urlparse(driver.current_url)
        await log_in_at_the_provider(driver, "alice")
        await until("back in the console", lambda: driver.find_element(By.ID, "console").is_displayed())
        check(driver.current_url == OPTS.base + "/console/", f"the code is gone from the address: {driver.current_url}")
        check(driver.find_element(By.ID, "who-subject").text == "alice@acme.example",
              f"the subject shown is the e-mail: {driver.find_element(By.ID, 'who-subject').text}")
        # Kept in the tab, never in a cookie (the provider's own cookies
        # share 127.0.0.1 with the console here, so the check is on the token).
        bearer = stored(driver, "scout.console.token")
        check(bearer and bearer.count(".") == 2, "a JWT is kept in the tab's sessionStorage")
        check(bearer not in driver.execute_script("return document.cookie;"), "no token in a cookie")
        summary["authorize"] = first.path

        # Acme's write is shown, globex's is not.
        await until("acme's write", lambda: OPTS.acme in shown_ids(driver))
        check(OPTS.globex not in shown_ids(driver), f"globex's write is not shown: {shown_ids(driver)}")

        # Refreshed before it expires, the write still in view.
        first_token = stored(driver, "scout.console.token")
        check(stored(driver, "scout.console.refresh"), "a refresh token is kept in the tab")
        await until("a refreshed token", lambda: stored(driver, "scout.console.token") not in (None, first_token),
                    seconds=OPTS.token_ttl * 2)
        await asyncio.sleep(OPTS.token_ttl * 0.5)
        check(stored(driver, "scout.console.token") is not None, "still signed in past the first token's life")
        check(not driver.find_element(By.ID, "expired").is_displayed(), "not asked to sign in again")
        check(OPTS.acme in shown_ids(driver), "the write is still shown")
        summary["refreshed"] = True

        # Her sign-in revoked at the provider: the token expires, the write stays.
        refresh = stored(driver, "scout.console.refresh")
        revoke = urllib.request.Request(
            OPTS.issuer + "/token/revocation",
            data=urllib.parse.urlencode({"token": refresh, "client_id": "scout-console",
                                         "token_type_hint": "refresh_token"}).encode(),
            method="POST")
        with urllib.request.urlopen(revoke, timeout=30) as resp:
            check(resp.status == 200, f"revoked: {resp.status}")
        await until("the page asking to sign in again",
                    lambda: driver.find_element(By.ID, "expired").is_displayed(), seconds=OPTS.token_ttl * 3)
        check(OPTS.acme in shown_ids(driver), "the waiting write is still in view")
        item = driver.find_element(By.CSS_SELECTOR, f'#approvals li[data-id="{OPTS.acme}"]')
        check(all(not b.is_enabled() for b in item.find_elements(By.TAG_NAME, "button")),
              "its buttons are off while signed out")
        summary["kept_in_view"] = True

        # Signing in again (the provider remembers her) and approving.
        driver.find_element(By.ID, "sign-in-again").click()
        await until("the provider, or back at once", lambda: driver.current_url.startswith(OPTS.issuer)
                    or driver.current_url == OPTS.base + "/console/")
        if driver.current_url.startswith(OPTS.issuer) and await until(
                "its page", lambda: driver.find_elements(By.NAME, "login") or driver.current_url.startswith(OPTS.base)) \
                and driver.current_url.startswith(OPTS.issuer):
            await log_in_at_the_provider(driver, "alice")
            summary["logged_in_again"] = True
        await until("back in the console again", lambda: driver.current_url.startswith(OPTS.base)
                    and not driver.find_element(By.ID, "expired").is_displayed()
                    and driver.find_element(By.ID, "who").is_displayed())
        item = await until("the write, decidable", lambda: [
            li for li in driver.find_elements(By.CSS_SELECTOR, f'#approvals li[data-id="{OPTS.acme}"]')
            if li.find_element(By.CSS_SELECTOR, ".approve").is_enabled()])
        item[0].find_element(By.CSS_SELECTOR, ".approve").click()
        outcome = await until("the decision", lambda: "approved by" in (
            driver.find_element(By.CSS_SELECTOR, f'#approvals li[data-id="{OPTS.acme}"] .outcome').text)
            and driver.find_element(By.CSS_SELECTOR, f'#approvals li[data-id="{OPTS.acme}"] .outcome').text)
        check(outcome == "approved by alice@acme.example", f"decided by her e-mail: {outcome}")
        summary["approved_by"] = outcome
    except Exception:
        # Where the browser was, for whoever reads the failure.
        print("at", driver.current_url, driver.find_element(By.TAG_NAME, "body").text[:2000], file=sys.stderr)
        raise
    finally:
        driver.quit()
    print(json.dumps(summary))


asyncio.run(main())
