# syntax=docker/dockerfile:1

# Build: docker build --build-arg VERSION=$(git describe --tags --always) -t scheduler .
# Exec jobs: add --target exec for the Debian variant with a shell and tools.
# The binary is static (CGO_ENABLED=0), so the final image needs no libc.

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src

# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

COPY . .
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
        -o /out/scheduler ./cmd/scheduler

# The "exec" variant, for exec jobs: the same binary on Debian with a shell
# and the usual tools. Build it with --target exec. It stands before the
# default stage so a plain `docker build` still gives the distroless image.
FROM debian:bookworm-slim AS exec
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates tzdata bash curl coreutils procps \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 65532 nonroot \
    && useradd --uid 65532 --gid 65532 --create-home --home-dir /home/nonroot nonroot
COPY --from=build /out/scheduler /scheduler
# Numeric, as below, so runAsNonRoot can check it.
USER 65532:65532
WORKDIR /home/nonroot
EXPOSE 8080
ENTRYPOINT ["/scheduler"]
CMD ["run", "--config", "/etc/scheduler/jobs.yaml"]

# The default: distroless static: CA certificates, tzdata (job timezones need it) and
# /etc/passwd with the nonroot user, nothing else; no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/scheduler /scheduler
# 65532 is "nonroot" in distroless; written as numbers so Kubernetes'
# runAsNonRoot can check it without reading /etc/passwd.
USER 65532:65532
# The embedded etcd (no endpoints configured) keeps data_dir ./data here.
WORKDIR /home/nonroot
# api.listen must be 0.0.0.0:8080 (or SCHEDULER_LISTEN) to be reachable:
# the file's default, 127.0.0.1:8080, only answers inside the container.
EXPOSE 8080
# No HEALTHCHECK: Kubernetes probes /healthz and /readyz instead, and the
# image has no shell or curl to run one with.
ENTRYPOINT ["/scheduler"]
CMD ["run", "--config", "/etc/scheduler/jobs.yaml"]
