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


def test_fixture_and_marker(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "summary.json").write_text(json.dumps(SUMMARY))
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    proc = child_pytest(tmp_path, "test_user.py")
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
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "summary.json").write_text(json.dumps(SUMMARY))
    (tmp_path / "pyproject.toml").write_text("[tool.ragdoctor.gate]\nuse_ppi = true\n")
    (tmp_path / "test_user.py").write_text(MISUSE)
    proc = child_pytest(tmp_path, "test_user.py")
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
