# syntax=docker/dockerfile:1
# rekon: the host binary plus the reference guests, on a small non-root runtime.
#
#   docker build -t rekon:dev .
#
# The image also carries the reference guests in /usr/share/rekon/guests (a
# ready `--guests` directory for a quick try); in the cluster the guests come
# from the rekon-guests ConfigMap mounted at /etc/rekon/guests.

FROM rust:1.95-bookworm AS build
WORKDIR /src
RUN rustup target add wasm32-wasip2
COPY . .
# Cache the registry and the target dir between builds; copy results out of the cache.
# The guests come from the Makefile, which follows guests/*: every reference
# module (a guest with cases) lands in /out/guests as <world>.wasm.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    make reference-guests CARGO_TARGET_DIR=/src/target GUESTS_OUT=/out/guests \
 && cargo build --locked --release -p rekon \
 && cp target/release/rekon /out/rekon

# distroless/cc: glibc + libgcc, no shell, uid 65532 ("nonroot").
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/rekon /usr/local/bin/rekon
COPY --from=build /out/guests /usr/share/rekon/guests
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/rekon"]
CMD ["run", "--guests", "/etc/rekon/guests"]
