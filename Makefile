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
GUEST_CRATES := -p rekon-guest-pvc-protection -p rekon-guest-resource-claim -p rekon-guest-misbehaving -p rekon-guest-ephemeral-volume

.PHONY: setup guests build test guest-cases demo bench bench-scale bench-scale-real

setup:
	rustup target add wasm32-wasip2

guests: setup
	cargo build --profile $(GUEST_PROFILE) --target wasm32-wasip2 $(GUEST_CRATES)

build: guests
	cargo build -p rekon

guest-cases: build
	$(REKON) test --guest $(REKON_GUEST_DIR)/rekon_guest_pvc_protection.wasm guests/pvc-protection/cases
	$(REKON) test --guest $(REKON_GUEST_DIR)/rekon_guest_resource_claim.wasm guests/resource-claim/cases
	$(REKON) test --guest $(REKON_GUEST_DIR)/rekon_guest_ephemeral_volume.wasm guests/ephemeral-volume/cases

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
