# zpp's front door. `make demo` and `make test` do all the set-up on a fresh machine.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/cuda/bin

JOBS ?= $(shell nproc)
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=
CTEST_FLAGS ?= --output-on-failure --timeout 600 -j $(JOBS)
FUZZ_SECONDS ?= 60

.PHONY: all build deps test demo bench mutants asan tsan fuzz format readme-env clean

all: build

deps:
	@bash tools/install-deps.sh

# configure DIR, extra flags...: (re)configures only when the build folder is new.
define configure
	@if [[ ! -f $(1)/CMakeCache.txt ]]; then \
	  cmake -S . -B $(1) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) $(2) >/dev/null; \
	fi
endef

build: deps
	$(call configure,build)
	@cmake --build build -j $(JOBS)

# The pinned torch (tools/install-torch.sh, once per machine) is for the tests that drive zpp
# from a real framework; they find its python in ZPP_TORCH_PYTHON.
test: build
	@python=$$(bash tools/install-torch.sh) && cd build && \
	  ZPP_TORCH_PYTHON=$$python ctest $(CTEST_FLAGS)

# The main job: the benchmark against plain NCCL on a GPU, the CPU simulation without one.
demo: build
	@bash tools/demo.sh build

bench: build
	@cd build && ctest $(CTEST_FLAGS) -L bench

# Breaks each key contract on purpose and checks that a test catches it (tools/mutants.sh, its
# own incremental build in build-mutants/; not part of `make test`: about 20 minutes).
mutants: build
	@bash tools/mutants.sh

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

# Regenerates the README's table of environment variables from src/config/env_vars.def.
readme-env: build
	@python3 tools/update_readme_env.py README.md build/bin/zpp-env

clean:
	rm -rf build build-asan build-tsan build-fuzz build-mutants
