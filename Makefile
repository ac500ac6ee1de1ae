# zpp's front door. `make demo` and `make test` do all the set-up on a fresh machine.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/cuda/bin

JOBS ?= $(shell nproc)
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=
CTEST_FLAGS ?= --output-on-failure --timeout 600 -j $(JOBS)
FUZZ_SECONDS ?= 60

.PHONY: all build deps torch test demo bench convergence netbench mutants asan tsan fuzz format \
        readme-env clean

all: build

deps:
	@bash tools/install-deps.sh

# configure DIR, extra flags...: (re)configures only when the build folder is new.
define configure
	@if [[ ! -f $(1)/CMakeCache.txt ]]; then \
	  cmake -S . -B $(1) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) $(2) >/dev/null; \
	fi
endef

# The pinned torch (tools/install-torch.sh), once per machine, for the `train` tests and
# `make convergence`; make demo never waits for it.
torch:
	@bash tools/install-torch.sh >/dev/null

build: deps
	$(call configure,build)
	@cmake --build build -j $(JOBS)

# The tests that drive zpp from a real framework find the pinned torch's python in
# ZPP_TORCH_PYTHON (plugin) or through tools/install-torch.sh (train).
test: build torch
	@python=$$(bash tools/install-torch.sh) && cd build && \
	  ZPP_TORCH_PYTHON=$$python ctest $(CTEST_FLAGS)

# The main job: the benchmark against plain NCCL on a GPU, the CPU simulation without one.
demo: build
	@bash tools/demo.sh build

bench: build
	@cd build && ctest $(CTEST_FLAGS) -L bench

# Breaks each key contract on purpose and checks that a test catches it (tools/mutants.py runs
# tools/mutants.toml in its own incremental build in build-mutants/; not part of `make test`:
# about 50 minutes).
mutants: build
	@py=$$(bash tools/install-lint.sh) && "$$py" tools/mutants.py

# FSDP2 and DeepSpeed ZeRO-3 on CPU ranks through zpp in every mode, over gloo, and DeepSpeed's
# own hpZ (bench/convergence/run.py; FRAMEWORK=fsdp2 or deepspeed runs one; FRAMEWORK=ddp,hsdp
# the compressed all-reduce's modes beside torch's DDP comm hooks): loss CSVs, plots and
# summary.json in build/convergence, the table into docs/benchmarks.md (the default frameworks'
# only).
# The plot needs Debian's matplotlib, which is for the system's python3 (a pyenv or venv may
# shadow it).
comma := ,
FRAMEWORK ?= fsdp2,deepspeed
convergence: build torch
	@plot_python=$$(for p in python3 /usr/bin/python3; do \
	    $$p -c 'import matplotlib' 2>/dev/null && { echo $$p; break; }; done); \
	  $${plot_python:-python3} bench/convergence/run.py --python "$$(bash tools/install-torch.sh)" \
	    --build build --frameworks $(FRAMEWORK) \
	    $(if $(filter fsdp2$(comma)deepspeed,$(FRAMEWORK)),--readme docs/benchmarks.md)
	@$(if $(filter fsdp2$(comma)deepspeed,$(FRAMEWORK)),cp build/convergence/summary.json \
	    bench/results/convergence_cpu_summary.json && python3 tools/results_tables.py)

# Real time on links of known speed (root: network namespaces; tools/netbed): FSDP2 and
# DeepSpeed ZeRO-3 on 2 nodes x 2 CPU ranks at 50, 200, 1000 and 10000 Mbit/s, gloo and every
# zpp mode side by side (bench/netbench/run.py): results and plot in bench/results/netbench_cpu.*,
# the table into docs/benchmarks.md. About 25 minutes on 2 quiet cores;
# NETBENCH_FLAGS="--rates 50,1000 --modes plain,auto" narrows it. FRAMEWORK=ddp,hsdp times DDP's
# and HSDP's modes (compressed all-reduce, torch's comm hooks) instead, into
# bench/results/netbench_replicated_cpu.*. The plot needs matplotlib, as for convergence.
NETBENCH_FLAGS ?=
netbench: build torch
	@plot_python=$$(for p in python3 /usr/bin/python3; do \
	    $$p -c 'import matplotlib' 2>/dev/null && { echo $$p; break; }; done); \
	  $${plot_python:-python3} bench/netbench/run.py --python "$$(bash tools/install-torch.sh)" \
	    --build build --frameworks $(FRAMEWORK) --results bench/results \
	    $(if $(filter fsdp2$(comma)deepspeed,$(FRAMEWORK)),--readme docs/benchmarks.md) \
	    $(NETBENCH_FLAGS)
	@python3 tools/results_tables.py

# The host code under AddressSanitizer+UBSan and under ThreadSanitizer (CUDA off: host only).
asan: deps
	$(call configure,build-asan,-DZPP_SANITIZER=address -DZPP_ENABLE_CUDA=OFF -DZPP_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest $(CTEST_FLAGS) -LE gpu

tsan: deps
	$(call configure,build-tsan,-DZPP_SANITIZER=thread -DZPP_ENABLE_CUDA=OFF -DZPP_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build build-tsan -j $(JOBS)
	@cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest $(CTEST_FLAGS) -LE gpu

# libFuzzer on the environment parser; new inputs go to build-fuzz/, the seed corpus stays.
fuzz: deps
	$(call configure,build-fuzz,-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DZPP_FUZZ=ON -DZPP_ENABLE_CUDA=OFF -DZPP_BUILD_BENCH=OFF -DZPP_SANITIZER=address -DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build build-fuzz -j $(JOBS) --target zpp_fuzz_env
	@mkdir -p build-fuzz/corpus/env
	build-fuzz/bin/zpp_fuzz_env -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  build-fuzz/corpus/env tests/fuzz/corpus/env

format: deps
	@git ls-files '*.h' '*.cc' '*.cu' '*.cuh' | xargs clang-format -i

# Regenerates the table of environment variables in docs/configuration.md from
# src/config/env_vars.def.
readme-env: build
	@python3 tools/update_readme_env.py docs/configuration.md build/bin/zpp-env

clean:
	rm -rf build build-asan build-tsan build-fuzz build-mutants
