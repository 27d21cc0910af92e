# Kobo Ledger. `make run` serves on the embedded log; `make test` runs every test.
# Both install the Debian packages they need first (tools/install-deps.sh, idempotent).

BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
LISTEN ?= 127.0.0.1:8080
DATA_DIR ?= ./data
CMAKE_FLAGS ?=

.PHONY: all deps build run test kafka kafka-cluster-test cluster cluster-test cluster-bank cluster-bench asan tsan bench fuzz sim format format-check tidy clean

all: build

deps:
	@tools/install-deps.sh build

# The default tree keeps line tables only (-g1: every frame's function, file and line for perf,
# gdb's backtraces and a core's stack; no local variables): its compiles take a third less than
# with full -g (command/decide.cc: 17 s against 25 s), in CI as on a laptop. A debugging session
# that wants the locals: make build RELEASE_DEBUG_FLAGS=-DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O2 -g -DNDEBUG'.
RELEASE_DEBUG_FLAGS ?= -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O2 -g1 -DNDEBUG'
# UNITY=ON compiles each component's sources eight to a compile (CMakeLists.txt, kobo_unity): a
# build from scratch takes less, an edit recompiles its whole batch. CI builds so (this tree, the
# TSan and fuzz trees; tidy then checks the batches, tools/tidy.sh); the ASan tree compiles each
# source alone, whatever UNITY says, and so proves each includes what it uses.
UNITY ?= OFF
build: deps
	@cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(RELEASE_DEBUG_FLAGS) -DKOBO_UNITY=$(UNITY) \
	  $(CMAKE_FLAGS) >/dev/null
	@cmake --build build -j$(JOBS)

# The admin API is on with a key made once in $(DATA_DIR)/admin-key (mode 0600): the quick start
# makes a business with it (README.md). Production gives the admin key and the master key
# explicitly (docs/security.md).
run: build
	@mkdir -p $(DATA_DIR) && { [ -s $(DATA_DIR)/admin-key ] || \
	  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > $(DATA_DIR)/admin-key); }
	./build/kobo serve --listen $(LISTEN) --data-dir $(DATA_DIR) --admin-key-file $(DATA_DIR)/admin-key

# The Kafka-labelled tests run a real Apache Kafka broker: a JRE and Maven from Debian, the
# broker's jars from Maven Central (tools/kafka/pom.xml).
kafka:
	@tools/install-deps.sh kafka
	@test -f tools/kafka/target/lib/kafka_2.13-3.9.0.jar || (cd tools/kafka && mvn -q -B package)

# A failed test's output is printed where it ended; tools/ctest_failures.py prints its assertions
# and its server's last log lines again after the summary, where a log cut to its end keeps them.
test: build kafka
	ctest --test-dir build --output-on-failure -j2 --timeout 900 || { tools/ctest_failures.py build; exit 1; }

# The bank invariants on a three-broker cluster (tools/kafka/broker.sh start DIR --cluster:
# replication factor 3, min.insync.replicas 2) while the partition's leader is killed under load
# and while a node is killed -9 and restarted in a broker outage. Not in `make test` nor CI
# (about 4 minutes on 2 cores); its figures are printed at the end.
kafka-cluster-test: build kafka
	./build/tests/it_kafka_faults_test --gtest_filter='KafkaCluster.*'

# A Kobo cluster on loopback: a broker and three nodes (tools/cluster.sh; docs/architecture.md
# section 8a). `tools/cluster.sh stop $(CLUSTER_DIR)` stops it.
CLUSTER_DIR ?= ./cluster-data
cluster: build kafka
	tools/cluster.sh start $(CLUSTER_DIR)

# The three-node suite alone (ctest label `cluster`; `make test` runs it too, in its Kafka run).
cluster-test: build kafka
	ctest --test-dir build --output-on-failure -L cluster --timeout 900 || { tools/ctest_failures.py build; exit 1; }

# The bank run of a cluster (tools/cluster_bank.py): three nodes and a broker on loopback, a bank
# workload sent to random nodes while nodes are killed -9 (6 times) and stopped with SIGTERM, and
# the broker killed -9 once; then the bank invariants, `kobo audit` of the topic and of every
# node's views, and the figures (failover times, forwarded vs local p50, token wait p99). About
# 4 minutes; not in `make test`. BANK_FLAGS: e.g. --seconds 300 --kills 10 --seed 7.
BANK_FLAGS ?=
cluster-bank: build kafka
	python3 tools/cluster_bank.py $(BANK_FLAGS)

# The cluster's rows of docs/capacity.md: one partition's rate and latency at 64 and 384
# connections, sent to its owner and forwarded through another node (bench/cluster_bench.sh). A new
# node's readiness on a 1,000,000-event topic, through a peer's checkpoint and by replaying the
# topic, is `make bench`'s (ONLY=join: bench/join_bench.sh, which needs kobo_make_log).
cluster-bench: build kafka
	bench/cluster_bench.sh 10

# The seeded simulation for many seeds (make test runs a few): SEEDS seeds from FIRST_SEED, each
# SIM_STEPS commands; a failing seed prints how to reproduce it.
SEEDS ?= 100
FIRST_SEED ?= 1
SIM_STEPS ?= 300
sim: build
	./build/tests/kobo_sim --seeds $(SEEDS) --first $(FIRST_SEED) --steps $(SIM_STEPS)

# ASan + UBSan build running the whole suite but its repeats on other backends: the integration
# suites again on Kafka (`kafka.*`) and the Kafka suites again over TLS and SASL (kafka_secured).
# Their code of ours is the routes, projection and writer the embedded runs already take under
# ASan; the Kafka log's own (kafka_log_test, it_kafka_faults_test) runs here. `make test` runs all.
# The three-node suite (label cluster) is left to `make test`: what it asserts is how fast a
# partition moves (12 s after kill -9, 3 s after SIGTERM) and a /readyz that holds under load,
# times a Debug ASan build of three nodes on two cores cannot be held to. The checks of sources
# and documents alone (label static) read nothing this tree built, so they run in `make test` only.
# Built with Debian's clang, as `make tsan` and `make fuzz` are: its sanitized code compiles in
# less than half GCC's time (a Beast coroutine file under ASan+UBSan: 31 s against 65 s).
# The clang trees' Debug builds keep line tables only (-gline-tables-only): a sanitizer's report
# names every frame's file and line from them, and the build takes 8 % less than with full -g.
SANITIZED_DEBUG_FLAGS ?= -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only
asan: deps kafka
	@tools/install-deps.sh clang
	@cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DKOBO_SANITIZE=ON \
	  $(SANITIZED_DEBUG_FLAGS) >/dev/null
	@cmake --build build-asan -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir build-asan --output-on-failure -j2 --timeout 1800 -LE 'kafka_secured|cluster|static' -E '^kafka[.]' \
	  || { tools/ctest_failures.py build-asan; exit 1; }

# TSan over the tests where threads meet: the writer and its callers, the projector beside it and
# its waiters, the snapshotter beside the writer, the simulation (writer, projector and restarts),
# the log follower, and HTTP under concurrent load. Only their targets are built, and the audit of
# the data dirs they leave.
TSAN_TARGETS ?= kobo command_test projection_test simulation_test log_follower_test it_concurrency_test \
  audit_integration_data_test
TSAN_TESTS ?= ^(Ledger|ProjectionTest|SnapshotTest|Simulation|LogFollower|Concurrency)\.
tsan: deps kafka
	@tools/install-deps.sh clang
	@cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DKOBO_TSAN=ON \
	  -DKOBO_UNITY=$(UNITY) $(SANITIZED_DEBUG_FLAGS) >/dev/null
	@cmake --build build-tsan -j$(JOBS) --target $(TSAN_TARGETS)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/tools/tsan.supp \
	  ctest --test-dir build-tsan --output-on-failure -j2 --timeout 1800 -LE kafka -R '$(TSAN_TESTS)' \
	  || { tools/ctest_failures.py build-tsan; exit 1; }

bench: kafka
	@tools/install-deps.sh build bench
	@cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DKOBO_BENCH=ON >/dev/null
	@cmake --build build-bench -j$(JOBS) --target kobo kobo_make_log kobo_engine_bench kobo_restart_bench
	bench/run.sh build-bench

# libFuzzer with Debian's clang (ASan+UBSan) in its own build dir: builds only the fuzz targets
# and the libraries they need, then runs each for FUZZ_SECONDS (fuzz/run.sh, fuzz/README.md).
FUZZ_SECONDS ?= 60
# Debug (-O0): the fuzz tree builds in about 180 s on 2 cores (before its precompiled headers, 300 s
# against about 500 s at -O2; the same sanitizers and coverage); its targets run slower per input,
# which a run of minutes can afford.
FUZZ_BUILD_TYPE ?= Debug
fuzz:
	@tools/install-deps.sh build clang
	@cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=$(FUZZ_BUILD_TYPE) -DCMAKE_CXX_COMPILER=clang++ \
	  -DKOBO_FUZZ=ON -DKOBO_UNITY=$(UNITY) $(SANITIZED_DEBUG_FLAGS) >/dev/null
	@cmake --build build-fuzz -j$(JOBS) --target fuzz_targets
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh build-fuzz

# Every C++ source git tracks, as .clang-format says (clang-format 14, Debian's): `format` rewrites
# them, `format-check` (in CI) fails naming each file that differs.
FORMAT_FILES = git ls-files '*.cc' '*.h' '*.cc.in'
format:
	@tools/install-deps.sh format
	@$(FORMAT_FILES) | xargs clang-format-14 -i
format-check:
	@tools/install-deps.sh format
	@$(FORMAT_FILES) | xargs clang-format-14 --dry-run --Werror
	@echo "format-check: every C++ source is formatted"

# clang-tidy 14 (Debian's) with the curated checks of .clang-tidy over the service's own sources,
# with the build's compile commands (tools/tidy.sh): in CI, where any finding fails it. The static
# analyzer explores at most TIDY_ANALYZER_NODES paths' nodes per function (9.5 min on 2 cores at
# its own budget, `make tidy TIDY_ANALYZER_NODES=deep`).
TIDY_ANALYZER_NODES ?= 40000
tidy: build
	@tools/install-deps.sh tidy
	@TIDY_ANALYZER_NODES=$(TIDY_ANALYZER_NODES) tools/tidy.sh build

clean:
	rm -rf build build-asan build-tsan build-bench build-fuzz
