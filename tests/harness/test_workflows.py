"""The GitHub workflows, which cannot run here: actionlint passes on both (and fails on a broken one), and the
nightly job's shell steps do what they say on a folder of nights."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kafka-chaos"
ACTIONLINT = next((str(p) for p in (shutil.which("actionlint"), CACHE / "bin" / "actionlint", Path.home() / "go" / "bin" / "actionlint")
                   if p and Path(p).is_file()), None)
def needs_actionlint(test):
    skip = pytest.mark.skipif(ACTIONLINT is None, reason="needs actionlint (make setup installs it when Go is there)")
    return pytest.mark.needs_setup(skip(test))


def workflow(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def step(job: dict, name: str) -> dict:
    [found] = [s for s in job["steps"] if s.get("name") == name]
    return found


@needs_actionlint
def test_actionlint_passes_both_workflows():
    done = subprocess.run([ACTIONLINT, "-no-color", str(WORKFLOWS / "nightly.yml"), str(WORKFLOWS / "ci.yml")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@needs_actionlint
def test_actionlint_finds_a_broken_workflow(tmp_path):
    broken = (WORKFLOWS / "ci.yml").read_text().replace("${{ github.workflow }}", "${{ github.no_such_field }}")
    (tmp_path / "ci.yml").write_text(broken.replace("runs-on: ubuntu-24.04", "runs-on: ubuntu-24.04\n    tieout: 3"))
    done = subprocess.run([ACTIONLINT, "-no-color", str(tmp_path / "ci.yml")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "no_such_field" in done.stdout and "tieout" in done.stdout


def test_ci_runs_make_test_on_push_and_pull_request_with_the_setup_caches():
    ci = workflow("ci.yml")
    assert {"push", "pull_request"} <= set(ci[True])   # YAML 1.1 reads the key `on` as true
    job = ci["jobs"]["test"]
    assert any("make test" in s.get("run", "") for s in job["steps"])
    cached = [s["with"]["path"] for s in job["steps"] if s.get("uses", "").startswith("actions/cache@")]
    assert cached == ["~/.m2/repository", "~/.cache/kafka-chaos"]
    assert [s["with"].get("cache") for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python")] == ["pip"]


def test_the_nightly_uploads_only_this_nights_folder_and_has_a_concurrency_group():
    nightly = workflow("nightly.yml")
    assert nightly["concurrency"]["group"] and nightly["concurrency"]["cancel-in-progress"] is False
    upload = [s for s in nightly["jobs"]["chaos"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    [paths] = [s["with"]["path"].splitlines() for s in upload]
    assert paths == ["${{ steps.night.outputs.dir }}/", "${{ env.NIGHTS }}/trend.html", "${{ env.NIGHTS }}/trend.json"]


def test_the_nightly_runs_in_parts_that_together_are_the_whole_night():
    """A night does not fit one job's 150 minutes: the families are split by one -k expression and its negation, and
    the zoo's bugs in two halves that name every bug once; each part keeps its own nights (its cache, its trend)."""
    from harness.zoo.runner import select
    job = workflow("nightly.yml")["jobs"]["chaos"]
    parts = job["strategy"]["matrix"]["include"]
    families = [p["family"] for p in parts if p["family"] != "none"]
    assert len(families) == 2 and families[1] == f"not ({families[0]})"
    bugs = [b for p in parts if p["bugs"] != "none" for b in p["bugs"].split()]
    assert sorted(bugs) == sorted(s.zoo.bug for _, s in select([])) and len(set(bugs)) == len(bugs)
    assert job["env"]["NIGHTS"] == "nightly/${{ matrix.part }}" and job["strategy"]["fail-fast"] is False
    keys = [s["with"]["key"] for s in job["steps"] if s.get("uses", "").startswith("actions/cache/")]
    assert keys and all(k.startswith("nightly-${{ matrix.part }}-") for k in keys)


def run_step(name: str, cwd: Path, **env) -> subprocess.CompletedProcess:
    job = workflow("nightly.yml")["jobs"]["chaos"]
    script = step(job, name)["run"]
    return subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **{k: str(v) for k, v in job["env"].items()}, "NIGHTS": "nightly", **env})


def test_the_nightly_names_this_nights_folder_from_nightly_latest(tmp_path):
    (tmp_path / "nightly" / "20261125-0217").mkdir(parents=True)
    (tmp_path / "nightly" / "latest").write_text("nightly/20261125-0217\n")
    output = tmp_path / "output"
    done = run_step("this night's folder", tmp_path, GITHUB_OUTPUT=str(output))
    assert done.returncode == 0 and output.read_text() == "dir=nightly/20261125-0217\n"
    (tmp_path / "nightly" / "latest").unlink()
    done = run_step("this night's folder", tmp_path, GITHUB_OUTPUT=str(output))
    assert "named no night folder" in done.stdout and output.read_text().endswith("dir=nightly/none\n")


def test_the_cache_keeps_the_last_30_nights_and_of_earlier_nights_what_the_trend_reads(tmp_path):
    nights = [f"202610{d:02}-0217" for d in range(1, 32)] + ["20261101-0217", "20261102-0217"]   # 33 nights
    for name in nights:
        run = tmp_path / "nightly" / name / "runs" / "test_x" / "run-1"
        for sub in ("report", "events", "produced", "consumed", "logs"):
            (run / sub).mkdir(parents=True)
        (run / "report" / "summary.json").write_text("{}")
    (tmp_path / "nightly" / "trend.html").write_text("page")
    done = run_step("keep the last nights for the next trend page", tmp_path, NIGHT=f"nightly/{nights[-1]}")
    assert done.returncode == 0, done.stderr
    kept = sorted(p.name for p in (tmp_path / "nightly").iterdir() if p.is_dir())
    assert kept == nights[-30:] and (tmp_path / "nightly" / "trend.html").is_file()
    runs = {name: tmp_path / "nightly" / name / "runs" / "test_x" / "run-1" for name in kept}
    assert sorted(p.name for p in runs[nights[-1]].iterdir()) == ["consumed", "events", "logs", "produced", "report"]
    assert sorted(p.name for p in runs[nights[-2]].iterdir()) == ["events", "report"]
    assert (runs[nights[-2]] / "report" / "summary.json").is_file()
