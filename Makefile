# rekon — one entry point for people and CI.
#   make demo    build everything and run the controllers on the embedded API server
#   make test    build the guests and run every test (what CI runs)
#   make bench   guest decision benchmark (wasm vs native)
#   make bench-scale       scale benchmark on the embedded API server (SCALE_MAX_N=10000 for a quick run)
#   make bench-scale-real  rekon vs kube-controller-manager v1.20.2 on a real kube-apiserver
#   make docs    build the book (docs/, mdBook) and check its links and commands

CARGO_TARGET_DIR ?= $(CURDIR)/target
export CARGO_TARGET_DIR
GUEST_PROFILE := guest
export REKON_GUEST_DIR := $(CARGO_TARGET_DIR)/wasm32-wasip2/$(GUEST_PROFILE)
REKON := $(CARGO_TARGET_DIR)/debug/rekon
# Every guest crate but the SDK: guests/<name> is the crate rekon-guest-<name>.
GUEST_CRATES := $(patsubst guests/%/,-p rekon-guest-%,$(filter-out guests/sdk/,$(wildcard guests/*/)))

.PHONY: setup guests reference-guests build test guest-cases demo bench bench-scale bench-scale-real docs

setup:
	rustup target add wasm32-wasip2

guests: setup
	cargo build --profile $(GUEST_PROFILE) --target wasm32-wasip2 $(GUEST_CRATES)

# The reference modules, one per guest with cases (guests/<world>/cases), as
# GUESTS_OUT/<world>.wasm: what the image ships (Dockerfile).
GUESTS_OUT ?= $(CARGO_TARGET_DIR)/reference-guests
reference-guests: guests
	mkdir -p $(GUESTS_OUT)
	set -e; for cases in guests/*/cases; do \
	  world=$$(basename $$(dirname $$cases)); \
	  cp $(REKON_GUEST_DIR)/rekon_guest_$$(echo $$world | tr - _).wasm $(GUESTS_OUT)/$$world.wasm; \
	done

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

# The book: mdBook (.ci/install-mdbook.sh) builds docs/ into docs/book; the test
# checks its links, the repository paths it names and the commands it shows.
docs:
	mdbook build docs
	cargo test --workspace --test docs --test adding_a_controller
