#!/usr/bin/env bash
# Installs mdBook, which `make docs` uses to build the book under docs/.
# Built from crates.io (a prebuilt binary download may not be reachable);
# only the search feature, no `serve`/`watch`, to keep the build short.
set -euo pipefail
MDBOOK_VERSION=0.5.4
if command -v mdbook >/dev/null && mdbook --version | grep -qx "mdbook v$MDBOOK_VERSION"; then
    exit 0
fi
cargo install mdbook --locked --version "$MDBOOK_VERSION" --no-default-features --features search
