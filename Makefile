# rekon — one entry point for people and CI.
#   make demo    build everything and run the controllers on the embedded API server
#   make test    build the guests and run every test (what CI runs)
#   make bench   guest decision benchmarks (wasm vs native; Rust, TypeScript, Python) and end-to-end throughput
#   make bench-scale       scale benchmark on the embedded API server (SCALE_MAX_N=10000 for a quick run)
#   make bench-scale-real  rekon vs kube-controller-manager v1.20.2 on a real kube-apiserver
#   make docs    build the book (docs/, mdBook) and check its links and commands

CARGO_TARGET_DIR ?= $(CURDIR)/target
export CARGO_TARGET_DIR
GUEST_PROFILE := guest
export REKON_GUEST_DIR := $(CARGO_TARGET_DIR)/wasm32-wasip2/$(GUEST_PROFILE)
REKON := $(CARGO_TARGET_DIR)/debug/rekon
# Every guest crate but the SDK: guests/<name> with a Cargo.toml is the crate
# rekon-guest-<name> (a TypeScript-only guest has none).
RUST_GUESTS := $(patsubst guests/%/Cargo.toml,%,$(filter-out guests/sdk/Cargo.toml,$(wildcard guests/*/Cargo.toml)))
GUEST_CRATES := $(addprefix -p rekon-guest-,$(RUST_GUESTS))

.PHONY: setup guests reference-guests build test guest-cases demo bench bench-scale bench-scale-real docs
.PHONY: guests-rust guests-ts guests-py guest-toolchains guest-cases-native test-ts-guests

setup:
	rustup target add wasm32-wasip2

guests: guests-rust guests-ts guests-py

guests-rust: setup
	cargo build --profile $(GUEST_PROFILE) --target wasm32-wasip2 $(GUEST_CRATES)

# The reference modules, one per built-in world with cases (guests/<world>/cases),
# as GUESTS_OUT/<world>.wasm: what the image ships (Dockerfile). Controller
# modules are not built-in worlds: an operator pins each (guests.yaml `controllers:`).
GUESTS_OUT ?= $(CARGO_TARGET_DIR)/reference-guests
RUST_CASES := $(foreach g,$(RUST_GUESTS),$(wildcard guests/$(g)/cases))
reference-guests: guests-rust
	mkdir -p $(GUESTS_OUT)
	set -e; for cases in $(RUST_CASES); do \
	  world=$$(basename $$(dirname $$cases)); \
	  module=$(REKON_GUEST_DIR)/rekon_guest_$$(echo $$world | tr - _).wasm; \
	  [ -f $$module ] || continue; \
	  if grep -qa 'rekon:reconcile/controller-decider@' $$module; then continue; fi; \
	  cp $$module $(GUESTS_OUT)/$$world.wasm; \
	done

# ---- TypeScript and Python guests (guests/<name>/ts, guests/<name>/python) ----
# Built into $(REKON_GUEST_DIR) as rekon_guest_<name>_ts.wasm / _py.wasm beside the
# Rust rekon_guest_<name>.wasm; every step is a file rule, so a repeated `make guests`
# only redoes what changed. A TypeScript guest's world is its name (the dedicated
# worlds: guests/pvc-protection/ts), or the one its file guests/<name>/ts/world
# names (`controller`: guests/ttl-after-finished/ts).
TS_SDK := guests/sdk/ts
TS_BIN := $(TS_SDK)/node_modules/.bin
TS_STAMP := $(TS_SDK)/node_modules/.package-lock.json
PY_SDK := guests/sdk/python
PY_VENV := $(CARGO_TARGET_DIR)/guest-python-venv
PY_STAMP := $(PY_VENV)/.requirements
WIT_FILES := $(wildcard wit/*.wit wit/*/*/*.wit)
TS_NAMES := $(patsubst guests/%/ts/,%,$(filter-out guests/sdk/ts/,$(wildcard guests/*/ts/)))
ts_world = $(or $(strip $(file <guests/$(1)/ts/world)),$(1))
# The guests of a dedicated world, which `test-ts-guests` runs in place of the Rust ones.
TS_DEDICATED := $(foreach n,$(TS_NAMES),$(if $(wildcard guests/$(n)/ts/world),,$(n)))
PY_WORLDS := $(patsubst guests/%/python/,%,$(filter-out guests/sdk/python/,$(wildcard guests/*/python/)))
guest_wasm = $(REKON_GUEST_DIR)/rekon_guest_$(subst -,_,$(1))_$(2).wasm
TS_GUESTS := $(foreach n,$(TS_NAMES),$(call guest_wasm,$(n),ts))
PY_GUESTS := $(foreach w,$(PY_WORLDS),$(call guest_wasm,$(w),py))
TS_SDK_SOURCES := $(wildcard $(TS_SDK)/src/*.ts $(TS_SDK)/src/*/*.ts) $(TS_SDK)/tsconfig.base.json
PY_SDK_SOURCES := $(wildcard $(PY_SDK)/rekon_guest/*.py)

guest-toolchains: $(TS_STAMP) $(PY_STAMP)

$(TS_STAMP): $(TS_SDK)/package-lock.json
	cd $(TS_SDK) && npm ci --no-audit --no-fund
	touch $@

$(PY_STAMP): $(PY_SDK)/requirements.txt
	python3 -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install --quiet --require-hashes -r $<
	cp $< $@

$(TS_SDK)/dist/.built: $(TS_STAMP) $(TS_SDK_SOURCES) $(TS_SDK)/tsconfig.json
	$(TS_BIN)/tsc -p $(TS_SDK)
	touch $@

# One rule set per TypeScript guest: tsc, then componentize (every capability disabled).
define ts_guest
guests/$(1)/ts/dist/.built: $(TS_STAMP) $(TS_SDK_SOURCES) $$(wildcard guests/$(1)/ts/src/*.ts) guests/$(1)/ts/tsconfig.json
	$(TS_BIN)/tsc -p guests/$(1)/ts
	touch $$@

$(call guest_wasm,$(1),ts): guests/$(1)/ts/dist/.built $(TS_SDK)/dist/.built $(WIT_FILES) $(wildcard guests/$(1)/ts/world)
	@mkdir -p $$(@D)
	node $(TS_SDK)/dist/build.js --world $(call ts_world,$(1)) --wit wit -o $$@ guests/$(1)/ts/dist/$(1)/ts/src/guest.js
endef
$(foreach n,$(TS_NAMES),$(eval $(call ts_guest,$(n))))

define py_guest
$(call guest_wasm,$(1),py): $(PY_STAMP) $(PY_SDK_SOURCES) $$(wildcard guests/$(1)/python/*.py) $(WIT_FILES)
	@mkdir -p $$(@D)
	cd guests/$(1)/python && $(PY_VENV)/bin/componentize-py -d $(CURDIR)/wit -w rekon:reconcile/$(1)@0.2.0 \
	  componentize app -p . -p $(CURDIR)/$(PY_SDK) -o $$@.partial
	mv $$@.partial $$@
endef
$(foreach w,$(PY_WORLDS),$(eval $(call py_guest,$(w))))

guests-ts: $(TS_GUESTS) $(TS_SDK)/dist/.built
guests-py: $(PY_GUESTS)

# The SDKs' own tests, then the case files natively: the TypeScript runner (Node)
# and pytest, per guest (one pytest per guest: each loads its own world's bindings).
guest-cases-native: $(TS_SDK)/dist/.built $(foreach n,$(TS_NAMES),guests/$(n)/ts/dist/.built) $(PY_STAMP)
	rm -rf $(CARGO_TARGET_DIR)/ts-types-check && node $(TS_SDK)/scripts/types.mjs $(CARGO_TARGET_DIR)/ts-types-check
	diff -r $(TS_SDK)/generated $(CARGO_TARGET_DIR)/ts-types-check || \
	  { echo "$(TS_SDK)/generated is stale: run npm run types in $(TS_SDK)"; exit 1; }
	node --test $(TS_SDK)/dist/tests/
	PYTHONPATH=$(PY_SDK) $(PY_VENV)/bin/python -m pytest -q -p no:cacheprovider $(PY_SDK)/tests
	set -e; $(foreach n,$(TS_NAMES),\
	  node $(TS_SDK)/dist/cases/cli.js --world $(call ts_world,$(n)) --guest guests/$(n)/ts/dist/$(n)/ts/src/guest.js guests/$(n)/cases;)
	set -e; for w in $(PY_WORLDS); do \
	  PYTHONPATH=$(PY_SDK) $(PY_VENV)/bin/python -m pytest -q -p no:cacheprovider guests/$$w/python; \
	done

build: guests-rust
	cargo build -p rekon

# guests/<name>/cases against the module built from guests/<name>.
guest-cases: build guests-ts guests-py
	set -e; for cases in $(RUST_CASES); do \
	  guest=$$(basename $$(dirname $$cases) | tr - _); \
	  [ -f guests/$$(basename $$(dirname $$cases))/Cargo.toml ] || continue; \
	  $(REKON) test --guest $(REKON_GUEST_DIR)/rekon_guest_$$guest.wasm $$cases; \
	done
	$(MAKE) guest-cases-native
	set -e; for wasm in $(TS_GUESTS) $(PY_GUESTS); do \
	  name=$$(basename $$wasm .wasm | sed 's/^rekon_guest_//; s/_[a-z]*$$//' | tr _ -); \
	  echo "rekon test $$wasm guests/$$name/cases"; \
	  $(REKON) test --guest $$wasm guests/$$name/cases; \
	done

# The main end-to-end tests with the TypeScript guests of the dedicated worlds as the
# only modules: a guest directory holding each rekon_guest_<world>_ts.wasm under the
# conventional Rust name. (The controller modules have end-to-end tests of their own:
# tests/controller_modules_ts.rs.)
TS_ONLY_GUEST_DIR := $(CARGO_TARGET_DIR)/ts-only-guests
test-ts-guests: guests-ts
	rm -rf $(TS_ONLY_GUEST_DIR) && mkdir -p $(TS_ONLY_GUEST_DIR)
	for w in $(TS_DEDICATED); do \
	  cp $(REKON_GUEST_DIR)/rekon_guest_$$(echo $$w | tr - _)_ts.wasm $(TS_ONLY_GUEST_DIR)/rekon_guest_$$(echo $$w | tr - _).wasm; \
	done
	# generic::… runs the Rust controller module pvc-protection-generic: not a TypeScript guest.
	REKON_GUEST_DIR=$(TS_ONLY_GUEST_DIR) cargo test -p rekon-tests --no-fail-fast \
	  --test pvc_protection --test resource_claim --test ephemeral_volume --test controllers \
	  -- --skip generic::

test: guests
	cargo test --workspace --no-fail-fast
	$(MAKE) guest-cases

demo: build
	$(REKON) run --embedded --guests $(REKON_GUEST_DIR) --demo --write-kubeconfig rekon-demo.kubeconfig

bench: guests
	cargo bench -p rekon-runtime --bench decisions
	cargo bench -p rekon-runtime --bench languages
	cargo bench -p rekon-simulate --bench throughput

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
