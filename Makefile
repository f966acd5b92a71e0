# rekon — one entry point for people and CI.
#   make demo    build everything and run the controllers on the embedded API server
#   make test    build the guests and run every test (what CI runs)
#   make bench   guest decision benchmark (wasm vs native)
#   make bench-scale       scale benchmark on the embedded API server (SCALE_MAX_N=10000 for a quick run)
#   make bench-scale-real  rekon vs kube-controller-manager v1.20.2 on a real kube-apiserver

CARGO_TARGET_DIR ?= $(CURDIR)/target
export CARGO_TARGET_DIR
GUEST_PROFILE := guest
export REKON_GUEST_DIR := $(CARGO_TARGET_DIR)/wasm32-wasip2/$(GUEST_PROFILE)
REKON := $(CARGO_TARGET_DIR)/debug/rekon
# Every guest crate but the SDK: guests/<name> is the crate rekon-guest-<name>.
GUEST_CRATES := $(patsubst guests/%/,-p rekon-guest-%,$(filter-out guests/sdk/,$(wildcard guests/*/)))

.PHONY: setup guests build test guest-cases demo bench bench-scale bench-scale-real

setup:
	rustup target add wasm32-wasip2

guests: setup
	cargo build --profile $(GUEST_PROFILE) --target wasm32-wasip2 $(GUEST_CRATES)

build: guests
	cargo build -p rekon

# guests/<world>/cases against the module built from guests/<world>.
guest-cases: build
	set -e; for cases in guests/*/cases; do \
	  guest=$$(basename $$(dirname $$cases) | tr - _); \
	  $(REKON) test --guest $(REKON_GUEST_DIR)/rekon_guest_$$guest.wasm $$cases; \
	done

test: guests
	cargo test --workspace --no-fail-fast
	$(MAKE) guest-cases

demo: build
	$(REKON) run --embedded --guests $(REKON_GUEST_DIR) --demo --write-kubeconfig rekon-demo.kubeconfig

bench: guests
	cargo bench -p rekon-runtime --bench decisions

bench-scale: guests
	cargo bench -p rekon-simulate --bench scale

bench-scale-real: guests
	cargo build --release -p rekon
	cargo bench -p rekon-simulate --bench scale_real
