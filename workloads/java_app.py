"""A Java program of yours as a command member: `{python} -m workloads.java_app FOLDER [ARGS...]` builds the Maven
project in FOLDER on first use (its pom's finalName `app`, an uber-jar with its dependencies; the contract library
installed first), cached by the hash of its sources like the member program (workloads/java_build.py), then runs
`java -jar` on it with ARGS, in this process's place (the harness's signals reach the JVM itself).

    consumer_group: {members: [{count: 3, command: ["{python}", "-m", "workloads.java_app", "."]}]}
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from workloads.java_build import JavaBuildError, cache_root, project_jar

APP_JAR = "app.jar"


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: python -m workloads.java_app FOLDER [ARGS...]  (FOLDER holds the program's pom.xml)")
    folder = Path(argv[0]).resolve()
    if not (folder / "pom.xml").is_file():
        sys.exit(f"{folder}: no pom.xml (a Maven project whose finalName is `app`)")
    try:
        jar = project_jar(folder, cache_root("java-app"), APP_JAR)
    except JavaBuildError as exc:
        sys.exit(str(exc))
    java = shutil.which("java") or sys.exit("java is not on PATH: `make setup` installs a JDK")
    os.execv(java, [java, "-jar", str(jar), *argv[1:]])


if __name__ == "__main__":
    main(sys.argv[1:])
