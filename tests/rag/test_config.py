"""rag/config.py against the README: the Configuration section's example file loads and is the defaults."""
import re
from pathlib import Path

from rag.config import PipelineConfig, load_config

ROOT = Path(__file__).resolve().parents[2]


def test_the_readmes_configuration_example_loads_and_holds_the_defaults(tmp_path):
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Configuration", 1)[1]
    block = re.search(r"```toml\n(.*?)```", section, re.DOTALL).group(1)
    (tmp_path / "ragdoctor.toml").write_text(block, encoding="utf-8")
    cfg = load_config(tmp_path / "ragdoctor.toml", environ={})
    assert cfg.config_hash() == PipelineConfig().config_hash()
