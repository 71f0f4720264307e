# syntax=docker/dockerfile:1
# The example operator's image (with its webhooks, served when the chart turns them on): a static
# musl binary on an empty base, running as a non-root user.
#
#   docker build -t kubeward/configmap-generator:0.1.0 .
#
# Stage 1 builds with Rust on Alpine, whose native target is x86_64/aarch64-unknown-linux-musl and
# links statically by default. Stage 2 is `scratch`: no shell, no package manager, no libc; the
# binary talks TLS through rustls and trusts the cluster CA from its ServiceAccount mount.

ARG RUST_VERSION=1.89

FROM rust:${RUST_VERSION}-alpine AS builder
# musl-dev: the C runtime and headers that `ring` (rustls's crypto) compiles against.
RUN apk add --no-cache musl-dev
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p kubeward-examples --bin configmap_generator_webhooks \
    && cp target/release/configmap_generator_webhooks /configmap-generator

FROM scratch
LABEL org.opencontainers.image.title="configmap-generator" \
      org.opencontainers.image.description="kubeward's example operator" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=builder /configmap-generator /configmap-generator
# The same numeric user and group as the chart's runAsUser/runAsGroup; numeric, so that
# runAsNonRoot can be verified without an /etc/passwd.
USER 65532:65532
# /metrics and /healthz + /readyz (the chart's metrics.port and health.port).
EXPOSE 8080 8081
ENTRYPOINT ["/configmap-generator"]
