# musterd's container image: a static binary on distroless, as non-root.
# No Docker engine runs on musterd's build machines, so this file is not
# built in CI; build it with: docker build -t musterd:dev .
# config/manager/manager.yaml runs the image as UID 65532 with a read-only
# root filesystem. Only remote MCP servers (streamable-http, sse) work in
# this image as is: stdio servers need their commands (npx, python, …) in
# an image built FROM this one or beside it.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w" -o /out/musterd ./cmd/musterd

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/musterd /musterd
USER 65532:65532
EXPOSE 8090
ENTRYPOINT ["/musterd"]
CMD ["run", "--kubernetes"]
