# Tollgate: the gateway and its vendor plugins in one image, run as a
# non-root user, its data (Badger store, admin token, master key) in /data.
#
#   docker build -t tollgate .
#   docker run -p 127.0.0.1:8080:8080 -v tollgate-data:/data tollgate
#
# docs/deploy.md has the compose example and the systemd unit.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first: they change less often than the code.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
ARG DATE=unknown
# Static binaries (Badger is pure Go), the plugins beside the gateway:
# that is where it looks for them.
RUN set -e; \
    export CGO_ENABLED=0; \
    mkdir -p /out/bin /out/data; \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" \
        -o /out/bin/tollgate ./cmd/tollgate; \
    for p in sim openai anthropic gemini openai-compatible suno elevenlabs tavily syncso; do \
        go build -trimpath -ldflags "-s -w" -o /out/bin/tollgate-plugin-$p ./cmd/tollgate-plugin-$p; \
    done; \
    /out/bin/tollgate version

# distroless: no shell, no package manager; user nonroot is uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/bin/ /usr/local/lib/tollgate/
COPY --from=build --chown=65532:65532 /out/data /data
USER nonroot:nonroot
VOLUME ["/data"]
EXPOSE 8080
ENTRYPOINT ["/usr/local/lib/tollgate/tollgate"]
# The embedded default listens on loopback; in a container it must listen on
# every interface (publish the port on the host's loopback, as below, or put
# a TLS proxy in front). Mount a config and add --config to run your own.
CMD ["serve", "--listen", "0.0.0.0:8080", "--data-dir", "/data"]
