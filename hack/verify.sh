#!/usr/bin/env bash
# Fails when generated code or CRDs are stale, go.mod/go.sum are untidy, Go code is not
# gofmt'ed, the vendored third-party CRDs differ from ../shared/thirdparty-crds, the API
# reference (docs/reference/api) is not what `make docs` renders, a wire-contract name of
# pkg/api is missing from docs/reference, or a link in README.md or docs/ does not resolve.
set -euo pipefail
cd "$(dirname "$0")/.."

generated=(pkg/api pkg/client hack/clientgen/openapi config/crd config/webhook charts/grove/files/crds)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Snapshot, regenerate, compare, restore: verify never leaves the tree changed.
for p in "${generated[@]}" go.mod go.sum; do mkdir -p "$tmp/before/$(dirname "$p")"; cp -a "$p" "$tmp/before/$p"; done
restore() { for p in "${generated[@]}" go.mod go.sum; do rm -rf "$p"; cp -a "$tmp/before/$p" "$p"; done; }

status=0
make -s generate >/dev/null
for p in "${generated[@]}"; do
  if ! diff -r "$tmp/before/$p" "$p" >"$tmp/diff" 2>&1; then
    echo "generated files under $p are stale: run 'make generate'"; head -40 "$tmp/diff"; status=1
  fi
done
go mod tidy
if ! diff -q "$tmp/before/go.mod" go.mod >/dev/null || ! diff -q "$tmp/before/go.sum" go.sum >/dev/null; then
  echo "go.mod/go.sum are not tidy: run 'go mod tidy'"; diff "$tmp/before/go.mod" go.mod || true; status=1
fi
restore
# Nested modules that make test and make lint build (e2e/bench/compare/coscheduling is built only by make
# bench-compare: it pins Kubernetes 1.34 for scheduler-plugins).
for m in e2e/bench/gangwatch hack/tools/golangci-lint hack/tools/crd-ref-docs; do
  cp "$m/go.mod" "$tmp/nested.mod"; cp "$m/go.sum" "$tmp/nested.sum"
  (cd "$m" && go mod tidy)
  if ! diff -q "$tmp/nested.mod" "$m/go.mod" >/dev/null || ! diff -q "$tmp/nested.sum" "$m/go.sum" >/dev/null; then
    echo "$m/go.mod/go.sum are not tidy: run 'go mod tidy' in $m"; status=1
  fi
  cp "$tmp/nested.mod" "$m/go.mod"; cp "$tmp/nested.sum" "$m/go.sum"
done

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*'))
if [[ -n "$unformatted" ]]; then echo "not gofmt'ed:"; echo "$unformatted"; status=1; fi

if [[ -d ../shared/thirdparty-crds ]]; then
  if ! diff -r ../shared/thirdparty-crds config/thirdparty-crds >/dev/null; then
    echo "config/thirdparty-crds differs from ../shared/thirdparty-crds: copy them again"; status=1
  fi
fi
# One source of truth for installs: the Helm chart renders exactly config/default.
if ! go test -count=1 -run 'TestChartMatchesConfigDefault|TestChartCRDsAreConfigCRDs|TestOperatorRBACIsTheTable|TestBackendRBACMatchesConfig|TestOperatorReadsNoSecrets|TestDocsListEveryPermission' ./charts/ >"$tmp/chart" 2>&1; then
  echo "charts/grove, config/ and the permissions table of docs/operations/security.md disagree:"; tail -60 "$tmp/chart"; status=1
fi

# Documentation: the API reference is current, every wire-contract name is documented, every
# link resolves.
crd_ref_docs=${CRD_REF_DOCS:-bin/crd-ref-docs}
if [[ ! -x "$crd_ref_docs" ]]; then
  echo "$crd_ref_docs is missing: run 'make crd-ref-docs' (make verify builds it)"; status=1
else
  ./hack/api-docs/generate.sh "$crd_ref_docs" "$tmp/api"
  if ! diff -r "$tmp/api" docs/reference/api >"$tmp/diff" 2>&1; then
    echo "docs/reference/api is stale: run 'make docs'"; head -40 "$tmp/diff"; status=1
  fi
fi
go run ./hack/docsref || status=1
go run ./hack/mdlinks README.md docs || status=1
[[ $status -eq 0 ]] && echo "verify: generated files, API reference, doc links, go.mod and formatting are up to date"
exit $status
