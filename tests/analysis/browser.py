"""Headless Chromium (Debian's chromium, `make setup` installs it) for the report's browser tests."""
import shutil
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(profile: Path, *flags: str) -> list[str]:
    """The command line up to the page: headless, sandbox-free (root in a container), its own profile folder."""
    return [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            f"--user-data-dir={profile}", *flags]
