"""Headless Chromium for the console's browser tests: the browser, driven
through its ChromeDriver by Selenium, and a poll that waits for the page."""

import asyncio
import time

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def browser(chromium, chromedriver, size="1280,800"):
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", f"--window-size={size}"]:
        options.add_argument(flag)
    # The driver's path is given: Selenium Manager never looks for one online.
    return webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)


def viewport(driver, width, height):
    """Makes the page's viewport (`window.innerWidth` x `innerHeight`) exactly
    `width` x `height` CSS pixels by sizing the browser's window: the window
    is set once, the browser's own chrome measured (what the window holds
    beyond the viewport) and added. No device emulation: the page sees the
    window a laptop's browser of that inner size gives it."""
    driver.set_window_size(width, height)
    inner = lambda: driver.execute_script("return [window.innerWidth, window.innerHeight]")
    for _ in range(3):
        w, h = inner()
        if (w, h) == (width, height):
            return
        size = driver.get_window_size()
        driver.set_window_size(size["width"] + width - w, size["height"] + height - h)
    check(tuple(inner()) == (width, height), f"a viewport of {width}x{height}: {inner()}")


async def until(what, probe, seconds=30):
    """Polls `probe` (a function) until it returns something truthy."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = probe()
        except (StaleElementReferenceException, NoSuchElementException):
            # The page changed under the probe (or is another page for now).
            value = None
        if value:
            return value
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")
