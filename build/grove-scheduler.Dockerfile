# Build: docker build -f build/grove-scheduler.Dockerfile -t grove-scheduler .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v1.37.1 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" \
    -o /out/grove-scheduler ./cmd/grove-scheduler

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/grove-scheduler /grove-scheduler
USER 65532:65532
ENTRYPOINT ["/grove-scheduler"]
