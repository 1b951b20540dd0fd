"""What every command shares: the exit codes, the catalog's folder, a folder a command writes into."""
from __future__ import annotations

from pathlib import Path

from harness.bad_input import ScenarioError

CATALOG = Path(__file__).resolve().parents[2] / "scenarios"
EXIT_OK, EXIT_ANOMALIES, EXIT_BAD_INPUT, EXIT_HARNESS_FAILURE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

EPILOG = """exit codes (for CI):
  0  the run completed and the analysis found no anomaly
  1  the run completed and the analysis found anomalies (see report/summary.json); a group that did not
     become stable within run.stable_timeout_s or did not catch up within run.drain_timeout_s is one
     (the `unsettled` anomaly; with --no-analysis, 1 as well)
  2  bad input: an invalid scenario, flag or run directory; nothing was started
  3  the harness failed: the cluster did not start, the group could not be observed, the producer failed, the
     workload did not end, a fault did not inject or heal, the analysis failed
130  interrupted (SIGINT/SIGTERM); every fault was healed and every container removed first
"""



def check_folder(path: Path | None, flag: str) -> None:
    """A folder the command writes into is one, or can be made: no part of its path is a file."""
    if path is None:
        return
    for part in (path, *path.parents):
        if part.exists():
            if not part.is_dir():
                raise ScenarioError(f"{flag}: {part} is a file, not a folder")
            return


