"""`kafka-chaos zoo --merge ZOO_JSON --rejudge --dir DIR` (issue 38, item 5): the recorded runs judged again by the
signatures of the zoo files now, no run made again. Two hand-made runs analysed for real (one with librdkafka#4844's
mechanism planted, one clean), a zoo.json that recorded neither as shown, and the zoo file's signature tightened."""
import json
import shutil
import sys
from pathlib import Path

import yaml

from analysis.api import analyze
from harness import cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))
from analysis_runs import Run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ZOO_FILE = ROOT / "scenarios" / "zoo" / "librdkafka-4844.yaml"


def a_run(root: Path, skip: int | None) -> Path:
    """a consumes t:0 0-99, passing over ``skip`` (None: nothing), and commits 100: a commit_ahead past it
    (`skipped: 1`) and its loss (`lost`, count 1), #4844's signature."""
    r = Run(root).produce("t", 0, range(100))
    r.event("a", "started", 0, protocol="classic", assignor="range", commit="auto")
    r.event("a", "assigned", 10, ["t:0"], generation=1)
    r.consume("a", "t", 0, [o for o in range(100) if o != skip], at=100, generation=1)
    r.event("a", "committed", 400, offsets={"t:0": 100}, generation=1).event("a", "stopped", 500)
    run_dir = r.write()
    shutil.copy(ZOO_FILE, run_dir / "scenario.yaml")  # the thresholds a signature may read come from here
    return run_dir


def table(runs: list[Path]) -> dict:
    spec = yaml.safe_load(ZOO_FILE.read_text())["zoo"]
    recorded = [{"run_dir": str(d), "shown": False, "hits": [0, 0], "examples": [], "other": {}, "drained": True}
                for d in runs]
    return {"date": "2026-11-27", "bugs": [{
        "bug": spec["bug"], "file": ZOO_FILE.name, "spec": spec, "dates": ["2026-11-27"],
        "affected": {"side": "affected", "version": spec["affected"], "started": len(runs), "shown": 0,
                     "failures": [], "not_drained": 0, "other": {}, "runs": recorded},
        "fixed": {"side": "fixed", "version": spec["fixed"], "started": 0, "shown": 0, "failures": [],
                  "not_drained": 0, "other": {}, "runs": []}}]}


def rejudged(tmp_path: Path, zoo_dir: Path, capsys) -> dict:
    recorded = tmp_path / "zoo.json"
    out = tmp_path / f"out-{zoo_dir.name}"
    code = cli.main(["zoo", "--merge", str(recorded), "--rejudge", "--dir", str(zoo_dir), "--out", str(out)])
    capsys.readouterr()
    assert code == 0
    [bug] = json.loads((out / "zoo.json").read_text())["bugs"]
    return bug["affected"]


def test_rejudge_judges_the_recorded_runs_by_the_signature_now(tmp_path, capsys):
    from analysis.api import get_session
    spark = get_session()
    planted, clean = a_run(tmp_path / "planted", skip=50), a_run(tmp_path / "clean", skip=None)
    for run_dir in (planted, clean):
        analyze(run_dir, spark=spark)
    (tmp_path / "zoo.json").write_text(json.dumps(table([planted, clean])))

    as_filed = tmp_path / "zoo-as-filed"
    as_filed.mkdir()
    shutil.copy(ZOO_FILE, as_filed)
    affected = rejudged(tmp_path, as_filed, capsys)
    assert (affected["started"], affected["shown"]) == (2, 1)
    assert [r["shown"] for r in affected["runs"]] == [True, False] and affected["runs"][0]["hits"] == [1, 1]

    tightened = tmp_path / "zoo-tightened"
    tightened.mkdir()
    zoo = yaml.safe_load(ZOO_FILE.read_text())
    zoo["zoo"]["signature"][0]["where"] = {"skipped": 2}  # no run passed two records
    (tightened / ZOO_FILE.name).write_text(yaml.safe_dump(zoo))
    affected = rejudged(tmp_path, tightened, capsys)
    assert affected["shown"] == 0 and [r["hits"] for r in affected["runs"]] == [[0, 1], [0, 0]]
