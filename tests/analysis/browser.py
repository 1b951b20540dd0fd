"""Headless Chromium (Debian's chromium, `make setup` installs it) for the report's browser tests."""
import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def in_chromium(test):
    """A test that renders a page in Chromium: marked `browser`, and `needs_setup` (under CI it fails where it would
    skip for want of Chromium)."""
    for mark in (pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium"), pytest.mark.needs_setup,
                 pytest.mark.browser):
        test = mark(test)
    return test


def chromium(profile: Path, *flags: str) -> list[str]:
    """The command line up to the page: headless, sandbox-free (root in a container), its own profile folder."""
    return [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            f"--user-data-dir={profile}", *flags]
