# syntax=docker/dockerfile:1

# Build: docker build --build-arg VERSION=$(git describe --tags --always) -t scheduler .
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

# distroless static: CA certificates, tzdata (job timezones need it) and
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
