# quotaplane: the two commands are `make run` and `make test`; both set everything up first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

# Spark workers must use the venv's interpreter, not whatever python is first on PATH.
export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)
# Keep the embedded Spark on loopback.
export SPARK_LOCAL_IP ?= 127.0.0.1

.PHONY: run test lint bench bench-stream cluster-check kafka check-prereqs test-tools promtool java-parts pulsar clean

run: $(STAMP)
	$(BIN)/quotaplane run

test: $(STAMP) test-tools java-parts
	$(BIN)/ruff check .
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

# `quotaplane stream`: sustained rows/s against the batch stage, and latency (docs/performance.md).
bench-stream: $(STAMP)
	$(BIN)/python -m benchmarks.stream

# The bundled example on a loopback standalone master with two workers must decide like local[*].
cluster-check: $(STAMP)
	$(BIN)/python -m tests.support.cluster_check standalone

# The tests' real Kafka cluster for people: 3 KRaft nodes on loopback, each log dir on its own tmpfs;
# prints the bootstrap servers and a storage config for `quotaplane serve`; Ctrl-C stops it.
kafka: $(STAMP) java-parts
	$(BIN)/python -m tests.support.kafka

check-prereqs:
	@sh scripts/check-prereqs.sh "$(PYTHON)"

# A real Pulsar standalone on loopback for people, as the tests start it; Ctrl-C stops it.
pulsar: $(STAMP) java-parts
	$(BIN)/python -m tests.support.pulsar

# Tools the tests run, from Debian's packages where they are missing and we are root with apt-get:
# promtool (the metrics and alert rules), Chromium (the report at two widths), systemd-analyze (the
# systemd unit). Never fails the build: it prints why not, and the tests that need one fail.
test-tools:
	@sh scripts/install-debian-tool.sh promtool prometheus
	@sh scripts/install-debian-tool.sh chromium chromium
	@sh scripts/install-debian-tool.sh systemd-analyze systemd

promtool:
	@sh scripts/install-debian-tool.sh promtool prometheus

# The real Kafka (and the other Java parts) the tests start, resolved from Maven Central into ~/.m2;
# a part already resolved from an unchanged pom is not fetched again.
java-parts:
	@sh scripts/resolve-java-parts.sh

$(STAMP): pyproject.toml | check-prereqs
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[spark,report,dev]'
	$(BIN)/python -m quotaplane.build_class_archive
	@touch $(STAMP)

clean:
	-test -x $(BIN)/python && $(BIN)/python -m quotaplane.build_class_archive --remove
	rm -rf $(VENV) out .pytest_cache .ruff_cache .hypothesis
