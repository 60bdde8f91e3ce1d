# make demo: annotate data/sample.txt with the shipped default models
# make test: run the test suite
# Both create .venv and install torch (CPU build) and the package first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-nlpipe

.PHONY: install demo test test-fast bench bench-peers bench-ud bench-conll18 clean

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	@echo "nlpipe: installing torch==2.13.0 and nlpipe into $(VENV) ..." >&2
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip >&2
	@$(BIN)/python -m pip install -q torch==2.13.0 >&2
	@$(BIN)/python -m pip install -q -e ".[test,dask]" >&2
	@touch $@

demo: install
	@$(BIN)/nlpipe annotate data/sample.txt

test: install
	$(BIN)/python -m pytest -q

test-fast: install
	$(BIN)/python -m pytest -q -m "not slow and not corpus"

bench: install
	$(BIN)/python bench/io.py
	$(BIN)/python bench/annotate.py

# peers for bench/pos.py, bench/parse.py and bench/ud.py: UDPipe 1 and spaCy trained on en_ewt train,
# UDPipe 1 on fr_sequoia train (a few hours on one core)
bench-peers: install
	$(BIN)/python -m pip install -q ufal.udpipe spacy >&2
	$(BIN)/python bench/peers.py
	$(BIN)/python bench/peers.py --treebank fr_sequoia --only udpipe

# all CoNLL 2018 metrics of nlpipe's shipped models and UDPipe 1 on en_ewt test (after bench-peers)
bench-ud: install
	$(BIN)/python bench/ud.py --treebank en_ewt --repeat 3

# the CoNLL 2018 shared task on the treebanks of ../shared/corpora/ud22: nlpipe's pipeline and UDPipe 1 trained on
# each treebank's files, raw test text, every UD metric (about an hour of training per treebank on 2 cores)
bench-conll18: install
	$(BIN)/python -m pip install -q ufal.udpipe >&2
	$(BIN)/python bench/conll18.py $(wildcard $(or $(NLPIPE_CORPORA),../shared/corpora)/ud22/*/) --json bench/.conll18/results.json

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
