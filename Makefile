# gcomp: two commands matter on a fresh clone.
#   make demo   build the example models and run them, printing a table
#   make test   everything CI runs: formatting, vet, tests (ptxas is fetched first)

GO       ?= go
PKGS     := ./...
# Packages that run goroutines get a second pass under the race detector.
RACEPKGS := ./runtime/... ./sim/... ./data/... ./ops . ./serve ./lmserve/...
CUDA_DIR ?= $(CURDIR)/.cache/cuda
CUDA_DEV_DIR ?= $(CURDIR)/.cache/cuda-dev
NVVM_DIR ?= $(CURDIR)/.cache/nvvm
LLVM_DIR ?= $(CURDIR)/.cache/llvm
# LLVM 14's llvm-as-14 and llc-14 (scripts/fetch-llvm.sh's wrappers) for the tests that use them.
export PATH := $(LLVM_DIR)/bin:$(PATH)

.PHONY: all demo test tools fmt-check vet unit race flags nocgo cross gorgonia bench gcomp golden generate

all: test

gcomp:
	$(GO) build -o bin/gcomp ./cmd/gcomp

demo: gcomp
	$(GO) run ./examples/demo

# tools fetches NVIDIA's ptxas (and the driver library) into .cache/cuda, CUDA 12.4's ptxas
# (sm_89's fp8, sm_90a) into .cache/cuda12, libNVVM into
# .cache/nvvm, ONNX's node test suite (Debian's libonnx-testdata) into .cache/onnx-testdata,
# LLVM 14's llvm-as and llc into .cache/llvm and GPT-2's and Llama's tokenizer vocabularies (npm
# packages) into .cache/tokenizers; idempotent.
# Off CI (GCOMP_REQUIRE_PTXAS unset) a machine without apt-get gets a warning and ptxas tests skip.
tools:
	@sh scripts/fetch-cuda-tools.sh $(CUDA_DIR) >/dev/null || { \
	  if [ -n "$$GCOMP_REQUIRE_PTXAS" ]; then echo "could not fetch ptxas" >&2; exit 1; fi; \
	  echo "warning: could not fetch ptxas; tests that assemble PTX will skip" >&2; }
	@sh scripts/fetch-cuda-tools.sh --cuda12 >/dev/null || { \
	  if [ -n "$$GCOMP_REQUIRE_PTXAS" ]; then echo "could not fetch ptxas 12.4" >&2; exit 1; fi; \
	  echo "warning: could not fetch ptxas 12.4; tests that assemble fp8 kernels for sm_89 will skip" >&2; }
	@sh scripts/fetch-cuda-tools.sh --nvrtc >/dev/null || { [ -z "$$GCOMP_REQUIRE_PTXAS" ] || exit 1; echo "warning: could not fetch NVRTC; custom-op tests skip" >&2; }
	@sh scripts/fetch-onnx-testdata.sh >/dev/null || { \
	  if [ -n "$$GCOMP_REQUIRE_PTXAS" ]; then echo "could not fetch ONNX's test data" >&2; exit 1; fi; \
	  echo "warning: could not fetch ONNX's test data; the ONNX node suite will skip" >&2; }
	@sh scripts/fetch-cuda-tools.sh --nvvm $(NVVM_DIR) >/dev/null || { \
	  if [ -n "$$GCOMP_REQUIRE_PTXAS" ]; then echo "could not fetch libnvvm" >&2; exit 1; fi; \
	  echo "warning: could not fetch libnvvm; the NVVM back end's tests will skip" >&2; }
	@sh scripts/fetch-llvm.sh $(LLVM_DIR) >/dev/null || { \
	  if [ -n "$$GCOMP_REQUIRE_PTXAS" ]; then echo "could not fetch LLVM 14" >&2; exit 1; fi; \
	  echo "warning: could not fetch LLVM 14; the llvm-as and llc tests will skip" >&2; }
	@sh scripts/fetch-tokenizers.sh >/dev/null || { \
	  if [ -n "$$GCOMP_REQUIRE_PTXAS" ]; then echo "could not fetch the tokenizer vocabularies" >&2; exit 1; fi; \
	  echo "warning: could not fetch the tokenizer vocabularies (npm); the tokenizer reference tests will skip" >&2; }
	@sh scripts/fetch-openai-js.sh >/dev/null || { \
	  if [ -n "$$GCOMP_REQUIRE_PTXAS" ]; then echo "could not fetch the openai npm client" >&2; exit 1; fi; \
	  echo "warning: could not fetch npm's openai client; the serving test with a real client will skip" >&2; }

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# vet also type-checks the GPU suite (build tag gpu), which only runs where there is a GPU.
vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags gpu ./runtime/cuda ./runtime/collective ./cmd/gcomp ./lm .

unit:
	$(GO) test -count=1 -timeout 45m $(PKGS)

race:
	$(GO) test -count=1 -timeout 45m -race -short $(RACEPKGS)

# flags checks that every test package accepts -update (they all import internal/golden).
flags:
	$(GO) test -count=1 -run '^$$' $(PKGS) -update >/dev/null

# nocgo: the default binary needs no cgo (the CUDA driver is loaded through purego), and the
# loader's tests against the real driver library pass without cgo too.
nocgo:
	CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/gcomp
	CGO_ENABLED=0 $(GO) test -count=1 -run 'TestLoad|TestNoGPU|TestNoLibrary' ./runtime/cuda ./runtime/device
	CGO_ENABLED=0 $(GO) test -count=1 ./runtime/nccl

# cross: gcomp builds for the laptops it is cloned on (macOS) and for Windows, without cgo.
cross:
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/gcomp
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/gcomp

# gorgonia: the driver binding behind the gorgonia build tag (gorgonia.org/cu, cgo) compiles and
# vets against cuda.h and the link stub libcuda.so, fetched from Debian's nvidia-cuda-dev.
gorgonia:
	@sh scripts/fetch-cuda-tools.sh --dev $(CUDA_DEV_DIR) >/dev/null || { \
	  if [ -n "$$GCOMP_REQUIRE_PTXAS" ]; then echo "could not fetch cuda.h" >&2; exit 1; fi; \
	  echo "warning: could not fetch cuda.h; the gorgonia build is not checked" >&2; exit 0; }; \
	export CGO_CFLAGS=-I$(CUDA_DEV_DIR)/include CGO_LDFLAGS=-L$(CUDA_DEV_DIR)/lib; \
	$(GO) vet -tags gorgonia ./runtime/... ./cmd/gcomp && \
	$(GO) build -tags gorgonia -o /dev/null ./cmd/gcomp && echo "gorgonia: vet and build ok"

test: tools fmt-check vet unit race flags nocgo cross gorgonia

bench:
	$(GO) test -run XXX -bench . -benchtime 3x ./runtime/ref ./sim/... ./load

golden:
	$(GO) test ./... -update

# generate refreshes what the model loader embeds about the DSL; run it after changing frontend/ or ir/.
generate:
	$(GO) generate ./load/...
