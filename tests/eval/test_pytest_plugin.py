"""The pytest plugin, exercised in a child pytest run against real run summaries."""
import json
import os
import subprocess
import sys


def child_pytest(folder, test_file):
    """Run pytest on one file in `folder`; its report must not depend on the terminal's width or the caller's
    pytest options (CI's wider terminal once printed each failure's message twice, in the short summary too)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "COLUMNS")} | {"COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rN", "-p", "no:cacheprovider", test_file],
                          cwd=folder, capture_output=True, text=True, timeout=120, env=env)

SUMMARY = {"metrics": [{"metric": "groundedness", "judge": "nli", "n": 20, "mean": 0.82, "ci_low": 0.75, "ci_high": 0.9}],
           "unmeasured_share": 0.0}

USER_TESTS = '''
import pytest

def test_fixture_passes(ragdoctor_gate):
    ragdoctor_gate("run", min={"groundedness": 0.8}, max_unmeasured=0.05)

def test_fixture_fails(ragdoctor_gate):
    ragdoctor_gate("run", min={"groundedness": 0.9})

@pytest.mark.ragdoctor_gate("run", min={"groundedness": 0.8}, ci_lower=True)
def test_marker_fails_on_ci_lower_bound():
    pass

@pytest.mark.ragdoctor_gate("run", min={"groundedness": 0.7})
def test_marker_passes():
    pass

def test_a_failed_gate_is_an_assertion_error_a_test_can_expect(ragdoctor_gate):
    from eval.pytest_plugin import GateFailed

    with pytest.raises(GateFailed):
        ragdoctor_gate("run", min={"groundedness": 0.9})
'''


def user_project(tmp_path, tests: str, pyproject: str | None = None):
    """A user's project with a run folder (SUMMARY), its tests and optionally a pyproject.toml; pytest run on it."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "summary.json").write_text(json.dumps(SUMMARY))
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    (tmp_path / "test_user.py").write_text(tests)
    return child_pytest(tmp_path, "test_user.py")


def test_fixture_and_marker(tmp_path):
    proc = user_project(tmp_path, USER_TESTS)
    out = proc.stdout
    assert "2 failed, 3 passed" in out, out + proc.stderr
    assert "groundedness: 0.820" in out and "FAIL by 0.080" in out
    assert "CI lower bound" in out


MISUSE = '''
import pytest

def test_min_not_a_mapping(ragdoctor_gate):
    ragdoctor_gate("run", min="groundedness")

@pytest.mark.ragdoctor_gate(min={"groundedness": 0.1})
def test_marker_without_run(): pass

@pytest.mark.ragdoctor_gate("run", minimum={"groundedness": 0.1})
def test_marker_unknown_keyword(): pass

@pytest.mark.ragdoctor_gate("run", min={"groundedness": 0.1})
def test_use_ppi_from_pyproject_without_labels(): pass

def test_ppi_off_by_argument(ragdoctor_gate):
    ragdoctor_gate("run", min={"groundedness": 0.1}, ppi=False)

def test_min_twice(ragdoctor_gate):
    ragdoctor_gate("run", min={"groundedness": 0.9, "groundedness ": 0.1})

def test_fallback_without_ppi(ragdoctor_gate):
    ragdoctor_gate("run", min={"groundedness": 0.1}, ppi=False, ppi_fallback=True)
'''


def test_misuse_is_a_usage_error_and_use_ppi_in_pyproject_is_honoured(tmp_path):
    proc = user_project(tmp_path, MISUSE, pyproject="[tool.ragdoctor.gate]\nuse_ppi = true\n")
    out = proc.stdout
    assert "6 failed, 1 passed" in out, out + proc.stderr
    assert "UsageError: ragdoctor_gate: min must be a mapping" in out
    assert "ragdoctor_gate: min: 'groundedness' is given twice" in out  # the stricter of the two is never dropped
    assert "ppi_fallback: needs ppi=True" in out
    assert "def assert_gate" not in out and "rules." not in out and "During handling" not in out  # one line each
    assert out.count("UsageError: @pytest.mark.ragdoctor_gate(") == 2 and "AttributeError" not in out
    assert "no PPI-corrected estimate for judge nli: 0 labels, need 30" in out


def test_the_readme_example_runs_as_written(tmp_path):
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "ragdoctor_gate" in b]
    (tmp_path / "runs" / "nightly").mkdir(parents=True)
    summary = {"metrics": [{**SUMMARY["metrics"][0]},
                           {"metric": "context_precision", "judge": "nli", "n": 20, "mean": 0.9, "ci_low": 0.8,
                            "ci_high": 0.95}], "unmeasured_share": 0.0}
    (tmp_path / "runs" / "nightly" / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "test_readme.py").write_text(block)
    proc = child_pytest(tmp_path, "test_readme.py")
    assert "2 passed" in proc.stdout, proc.stdout + proc.stderr


def test_the_entry_point_is_a_module_of_the_ragdoctor_package():
    """pytest imports the pytest11 entry point in every suite of the environment: it must be ragdoctor's own module
    (the installed metadata says so: `pip install -e .` rewrites it), and importing it loads none of ragdoctor's
    top-level packages, whose names (eval, corpora, rag, diagnostics) a project may use for its own."""
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="pytest11") if e.name == "ragdoctor"]
    assert ep.value == "ragdoctor.pytest_plugin"
    code = ("import sys, ragdoctor.pytest_plugin; "
            "print(sorted(m for m in sys.modules if m.partition('.')[0] in ('eval', 'corpora', 'rag', 'diagnostics')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr


PROJECT_TESTS = '''
import sys

from eval.helpers import helper


def test_the_projects_own_eval_package_is_imported():
    assert helper() == 42


def test_the_plugin_is_loaded_and_loaded_none_of_ragdoctors_packages(request, ragdoctor_gate):
    assert request.config.pluginmanager.has_plugin("ragdoctor") and callable(ragdoctor_gate)
    theirs = [m for m in ("eval", "corpora", "rag", "diagnostics")
              if getattr(sys.modules.get(m), "__file__", "").startswith({root!r})]
    assert theirs == [], theirs
'''


def test_a_project_with_its_own_eval_package_collects_beside_the_plugin(tmp_path):
    """The audit's case: a project with eval/__init__.py and eval/helpers.py, whose test imports eval.helpers. The
    plugin, loaded before the project's conftest puts the project on sys.path, once imported ragdoctor's eval first
    (ModuleNotFoundError: No module named 'eval.helpers' at collection). `-P`: the child's sys.path holds no current
    folder, as with the `pytest` command (the project comes in through its conftest.py)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "__init__.py").write_text("")
    (tmp_path / "eval" / "helpers.py").write_text("def helper():\n    return 42\n")
    (tmp_path / "conftest.py").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_project.py").write_text(PROJECT_TESTS.format(root=str(root)))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "COLUMNS")} | {"COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert "2 passed" in proc.stdout and proc.returncode == 0, proc.stdout + proc.stderr


GATE_USES = '''
import pytest

import ragdoctor
from eval.pytest_plugin import GateFailed


def test_gatefailed_is_one_class_wherever_it_is_imported_from():
    assert GateFailed is ragdoctor.GateFailed and issubclass(GateFailed, AssertionError)


@pytest.mark.xfail(raises=GateFailed, strict=True)
@pytest.mark.ragdoctor_gate("run", min={"groundedness": 0.9})
def test_marker_xfail_takes_the_gatefailed(): ...


@pytest.mark.xfail(raises=ragdoctor.UsageError, strict=True)
@pytest.mark.ragdoctor_gate("run", min={"groundednes": 0.9})
def test_marker_xfail_takes_a_usage_error(): ...


@pytest.mark.xfail(raises=GateFailed, strict=True)
def test_fixture_xfail_takes_the_gatefailed(ragdoctor_gate):
    ragdoctor_gate("run", min={"groundedness": 0.9})


@pytest.mark.xfail(raises=GateFailed, strict=True)
@pytest.mark.ragdoctor_gate("run", min={"groundedness": 0.1})
def test_marker_gate_passed_so_the_strict_xfail_fails(): ...


def test_no_thresholds_is_a_usage_error_not_a_failed_gate(ragdoctor_gate):
    with pytest.raises(ragdoctor.UsageError, match="no thresholds given") as err:
        ragdoctor_gate("run")
    assert not isinstance(err.value, AssertionError)


def test_an_unknown_keyword_is_a_one_line_usage_error(ragdoctor_gate):
    with pytest.raises(ragdoctor.UsageError, match=r"^ragdoctor_gate\\(run, min=.*got an unexpected keyword "
                                                   r"argument 'mn'$"):
        ragdoctor_gate("run", mn={"groundedness": 0.8})


@pytest.mark.parametrize("kwargs, message", [
    ({"max_unmeasured": 0.1, "ci_lower": True}, r"^ci_lower=True chooses what a minimum is compared with, and there is no minimum"),
    ({"max_unmeasured": 0.1, "ppi": True}, r"^ppi=True chooses what a minimum is compared with"),
    ({"min": {"groundedness": 0.1}, "ppi": True, "ci_lower": True}, r"^ci_lower=True would do nothing with ppi=True"),
    ({"min": {"groundedness": 0.1}, "pyproject": " "}, r"^pyproject: a blank value"),
    ({"min": {"groundedness": 0.1}, "ppi": False, "ppi_fallback": True}, r"^ppi_fallback: needs ppi=True"),
])
def test_what_ragdoctor_gate_refuses_the_fixture_refuses(ragdoctor_gate, kwargs, message):
    with pytest.raises(ragdoctor.UsageError, match=message) as err:
        ragdoctor_gate("run", **kwargs)
    assert "--" not in str(err.value)  # the plugin's arguments, not the CLI's flags


def test_the_ppi_check_names_the_plugins_argument(ragdoctor_gate):
    with pytest.raises(GateFailed, match="or pass ppi_fallback=True"):
        ragdoctor_gate("run", min={"groundedness": 0.1}, ppi=True)
    ragdoctor_gate("run", min={"groundedness": 0.1}, ppi=True, ppi_fallback=True)
'''


def test_xfail_takes_the_gates_exceptions_and_misuse_is_usage(tmp_path):
    """xfail(raises=GateFailed) works for the marker as for the fixture (the marker raises the GateFailed itself, and
    reports it in one line); no threshold, an unknown keyword, and the options `ragdoctor gate` refuses (exit 2) are
    UsageErrors, checked by the same function as the CLI's."""
    proc = user_project(tmp_path, GATE_USES)
    out = proc.stdout
    assert "1 failed, 9 passed, 3 xfailed" in out, out + proc.stderr
    assert "[XPASS(strict)]" in out  # the gate that passed: the marked test ran and passed, so its xfail failed


MARKED_FAILURE = '''
import pytest


@pytest.mark.ragdoctor_gate("run", min={"groundedness": 0.9})
def test_marked(): ...
'''


def test_a_marked_test_fails_with_the_one_line_verdict(tmp_path):
    proc = user_project(tmp_path, MARKED_FAILURE)
    out = proc.stdout
    assert "1 failed" in out, out + proc.stderr
    lines = [ln for ln in out.splitlines() if "GateFailed" in ln]
    assert lines == ["GateFailed: ragdoctor gate failed for run: groundedness: 0.820 [95% CI 0.750-0.900] needs >= "
                     "0.900: FAIL by 0.080 (judge nli, n=20)"], out
    assert "pytest_plugin.py" not in out and "Traceback" not in out
