# Build: docker build -f build/grove-operator.Dockerfile -t grove-operator .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/grove-operator ./cmd/grove-operator

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/grove-operator /grove-operator
USER 65532:65532
ENTRYPOINT ["/grove-operator"]
