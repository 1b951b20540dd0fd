"""The floor and the seams, as the code stands: kafkanet/ imports nothing of this project, harness, faults and
workloads import it (never the other way round), and no fault kind reaches a container: a fault calls only
the protocols of faults/backend.py, which every backend implements."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OURS = ("kafkanet", "harness", "faults", "workloads", "analysis", "benchmarks")
CONTAINER_NAMES = {"docker", "testcontainers", "container", "get_wrapped_container"}


def imported_packages(path: Path) -> set[str]:
    """The top-level packages a module imports (absolute imports; this project has no relative ones)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
    return found


def container_uses(path: Path) -> list[str]:
    """Where a module imports a container engine or touches a container (x.container, get_wrapped_container)."""
    uses = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            uses += [f"{path.name}:{node.lineno} imports {n}" for n in names if n.split(".")[0] in CONTAINER_NAMES]
        elif isinstance(node, ast.Attribute) and node.attr in CONTAINER_NAMES:
            uses.append(f"{path.name}:{node.lineno} uses .{node.attr}")
    return uses


def test_the_floor_imports_nothing_of_ours():
    modules = sorted((ROOT / "kafkanet").glob("*.py"))
    assert modules, "kafkanet/ has no modules"
    for module in modules:
        ours = imported_packages(module) & set(OURS) - {"kafkanet"}
        assert not ours, f"kafkanet/{module.name} imports {sorted(ours)}: the floor must stand on nothing of ours"


def test_harness_faults_and_workloads_stand_on_the_floor_not_it_on_them():
    users = {package for package in ("harness", "faults", "workloads")
             for module in (ROOT / package).rglob("*.py") if "kafkanet" in imported_packages(module)}
    assert {"harness", "faults"} <= users


def test_no_fault_kind_touches_a_container():
    uses = [use for module in sorted((ROOT / "faults").glob("*.py")) for use in container_uses(module)]
    assert uses == [], "a fault calls the backend's protocols (faults/backend.py), never a container: " + "; ".join(uses)


def test_the_check_sees_a_container_where_there_is_one(tmp_path):
    """The check above can fail: the code it replaced (faults/broker.py, faults/lifecycle.py) is found."""
    old = tmp_path / "old_fault.py"
    old.write_text("import docker\n\ndef inject(broker):\n    broker.container.get_wrapped_container().kill()\n")
    assert container_uses(old) == ["old_fault.py:1 imports docker", "old_fault.py:4 uses .get_wrapped_container",
                                   "old_fault.py:4 uses .container"]


# Which of our packages each may import (docs/architecture.md's diagram): none imports one above it, so there is no
# circle between them.
MAY_IMPORT = {"kafkanet": set(), "workloads": {"kafkanet"}, "analysis": {"kafkanet"},
              "faults": {"workloads", "kafkanet"}, "harness": {"faults", "workloads", "analysis", "kafkanet"}}


def package_arrows(root: Path) -> dict[str, set[str]]:
    """Each top-level package -> the others of ours its modules import (those inside functions too)."""
    return {package: {p for module in (root / package).rglob("*.py") for p in imported_packages(module)
                      if p in MAY_IMPORT and p != package} for package in MAY_IMPORT}


def test_each_package_imports_only_those_below_it():
    for package, imports in package_arrows(ROOT).items():
        assert imports <= MAY_IMPORT[package], f"{package}/ imports {sorted(imports - MAY_IMPORT[package])}: an arrow up"


def test_the_arrow_check_sees_an_arrow_up(tmp_path):
    for package in MAY_IMPORT:
        (tmp_path / package).mkdir()
    (tmp_path / "workloads" / "x.py").write_text("def f():\n    from harness.run import run_scenario\n")
    assert package_arrows(tmp_path)["workloads"] == {"harness"}


def analysis_modules_imported(root: Path, package: str) -> set[str]:
    """The modules of analysis/ that `package`'s modules import, each as `analysis.x.y` (`analysis` alone: the
    package; a name imported from analysis.api is analysis.api)."""
    return set().union(*(analysis_imports_of(module) for module in (root / package).rglob("*.py")))


def analysis_imports_of(module: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(module.read_text(), str(module))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "analysis"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "analysis":
            found |= {f"{node.module}.{a.name}" for a in node.names} if node.module == "analysis" else {node.module}
    return found


def test_the_harness_calls_the_analysis_through_its_public_api_only():
    other = analysis_modules_imported(ROOT, "harness") - {"analysis.api"}
    assert not other, f"harness/ imports {sorted(other)}: import analysis.api instead (its public API)"


def test_the_api_check_sees_an_import_past_the_api(tmp_path):
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "x.py").write_text("from analysis.api import analyze\nfrom analysis.engine import spark\n"
                                               "def f():\n    from analysis import history\n")
    assert analysis_modules_imported(tmp_path, "harness") == {"analysis.api", "analysis.engine", "analysis.history"}


# The analysis's own unit tests reach the module they test; these benchmarks time one of the engine's plans or
# kernels against its peer, so they reach inside too. Everything else calls analysis.api.
ANALYSIS_OWN_TESTS = ROOT / "tests" / "analysis"
ENGINE_BENCHMARKS = {"group_width.py", "plan_timing.py", "radix_fold.py"}


def past_the_api(files) -> dict[str, list[str]]:
    found = {}
    for module in files:
        if other := sorted(analysis_imports_of(module) - {"analysis.api"}):
            found[str(module.relative_to(ROOT))] = other
    return found


def test_the_benchmarks_and_tests_call_the_analysis_through_its_public_api():
    files = [m for m in (ROOT / "tests").rglob("*.py") if ANALYSIS_OWN_TESTS not in m.parents]
    files += [m for m in (ROOT / "benchmarks").rglob("*.py") if m.name not in ENGINE_BENCHMARKS]
    other = past_the_api(files)
    assert not other, f"these import analysis/ past analysis.api (add the name to analysis/api.py): {other}"


def test_every_name_of_the_api_resolves():
    import analysis.api as api
    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert not missing and set(api.__all__) >= {"analyze", "compare", "get_session", "REGISTRY"}, missing


def test_the_api_loads_no_check_or_spark_for_the_cli_parser():
    """`kafka-chaos --help` builds every parser: the API loads only the modules asked for, not the checks or Spark."""
    code = ("import sys; from harness.cli import build_parser; build_parser(); "
            "print(sorted(m for m in sys.modules if m.startswith(('analysis.checks', 'numpy', 'pyspark', 'pyarrow'))))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]", loaded


MAX_ANALYSIS_LINES = 800


def test_no_module_of_the_analysis_is_over_800_lines():
    long = {str(m.relative_to(ROOT)): n for m in (ROOT / "analysis").rglob("*.py")
            if (n := len(m.read_text().splitlines())) > MAX_ANALYSIS_LINES}
    assert not long, f"split these modules (over {MAX_ANALYSIS_LINES} lines): {long}"
