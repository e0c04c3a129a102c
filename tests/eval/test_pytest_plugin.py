"""The pytest plugin, exercised in a child pytest run against real run summaries."""
import json
import subprocess
import sys

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
'''


def test_fixture_and_marker(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "summary.json").write_text(json.dumps(SUMMARY))
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "test_user.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    out = proc.stdout
    assert "2 failed, 2 passed" in out, out + proc.stderr
    assert "groundedness: 0.820" in out and "FAIL by 0.080" in out
    assert "CI lower bound" in out
