# Grove: every workflow is a make target. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ROOT        := $(CURDIR)
BIN         := $(ROOT)/bin
GO          ?= go
K8S_VERSION := v1.37.1
K8S_LDFLAGS := -s -w -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
               -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37
# The Grove release stamped into both binaries and used as the image tag: `git describe` of the
# newest v* tag (v0.0.0-<commit> without one); override with `make build VERSION=v1.2.3`.
VERSION     ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo "v0.0.0-$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo -dirty)")
# The registry images are tagged for (make images) and that the binaries name as their own image
# (the startup-waiter default): the one place to change it besides the chart's imageRegistry.
IMAGE_REGISTRY ?= localhost/grove
GROVE_LDFLAGS := $(K8S_LDFLAGS) -X github.com/ai-dynamo/grove/pkg/version.gitVersion=$(VERSION) \
                 -X github.com/ai-dynamo/grove/pkg/version.imageRegistry=$(IMAGE_REGISTRY)
TEST_TIMEOUT ?= 25m
comma       := ,
# Control-plane binaries are rebuilt only when the pinned kubernetes/etcd versions change: the
# stamp's name carries a hash of those go.mod lines (robust to checkouts that touch go.mod).
K8S_PINS    := $(shell grep -E '^[[:space:]]*(k8s.io/kubernetes|go.etcd.io/etcd/server/v3|k8s.io/apiserver =>) ' go.mod | sha256sum | cut -c1-12)
K8S_STAMP   := $(BIN)/.k8s-bins-$(K8S_PINS)
export KUBEBUILDER_ASSETS := $(BIN)
export GROVE_BIN_DIR := $(BIN)

##@ Develop

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_-]+:.*##/ {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2} /^##@/ {printf "\n%s\n", substr($$0, 5)}' $(MAKEFILE_LIST)

.PHONY: kwok
kwok: ## Build kwok v0.8.0 (simulated nodes) into bin/.
	@test -x $(BIN)/kwok || $(GO) build -o $(BIN)/kwok sigs.k8s.io/kwok/cmd/kwok

.PHONY: build
build: ## Build grove-operator, grove-scheduler and the kubectl-grove plugin into bin/ (e2e runs them as processes).
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(GROVE_LDFLAGS)" -o $(BIN)/ ./cmd/grove-operator ./cmd/grove-scheduler ./cmd/kubectl-grove

# make images: OCI image-layout tarballs bin/images/<name>.oci.tar, tagged
# $(IMAGE_REGISTRY)/<name>:$(VERSION), built from static binaries without a container engine.
# Same commit and VERSION give the same digests (SOURCE_DATE_EPOCH is the commit time).
PLATFORMS         ?= linux/amd64,linux/arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_DIR         := $(BIN)/images

.PHONY: images
images: ## Build the grove-operator and grove-scheduler images (OCI tarballs in bin/images; PLATFORMS, IMAGE_REGISTRY, VERSION).
	@mkdir -p $(IMAGE_DIR)
	@for p in $(subst $(comma), ,$(PLATFORMS)); do \
		echo ">> building static binaries for $$p"; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags "$(GROVE_LDFLAGS) -buildid=" \
			-o $(IMAGE_DIR)/$${p%/*}_$${p#*/}/ ./cmd/grove-operator ./cmd/grove-scheduler || exit 1; \
	done
	$(GO) run ./hack/imagebuild -registry $(IMAGE_REGISTRY) -version $(VERSION) \
		-revision $$(git rev-parse HEAD 2>/dev/null || echo unknown) -source-date-epoch $(SOURCE_DATE_EPOCH) \
		-platforms $(PLATFORMS) -bindir $(IMAGE_DIR) -out $(IMAGE_DIR)

.PHONY: generate
generate: ## Regenerate deepcopy code, CRDs and webhook configurations (controller-gen v0.23.0 via go tool).
	$(GO) tool controller-gen object:headerFile=hack/boilerplate.go.txt paths=./pkg/api/...
	$(GO) tool controller-gen crd:generateEmbeddedObjectMeta=true,allowDangerousTypes=true \
		paths=./pkg/api/core/... paths=./pkg/api/scheduler/... output:crd:artifacts:config=config/crd
	@# The Helm chart ships the same CRDs (kept, not templated: see charts/grove/templates/crds.yaml).
	@rm -f charts/grove/files/crds/*.yaml && cp config/crd/*_*.yaml charts/grove/files/crds/
	$(GO) tool controller-gen webhook paths=./internal/operator/webhook/... output:webhook:artifacts:config=config/webhook
	@gofmt -w pkg/api
	@$(MAKE) -s clients

# Typed clients of the CRD groups (k8s.io/code-generator v0.37.1 via go tool): apply
# configurations, a versioned clientset, listers and informers under pkg/client. Regenerated from
# scratch so that a removed type leaves no file behind; pkg/client/doc.go is hand-written.
API_PKG        := github.com/ai-dynamo/grove/pkg/api
CLIENT_PKG     := github.com/ai-dynamo/grove/pkg/client
CLIENT_GROUPS  := core/v1alpha1 scheduler/v1alpha1
CLIENT_INPUTS  := $(addprefix $(API_PKG)/,$(CLIENT_GROUPS))
# Apply configurations of the Kubernetes types the Grove API embeds come from client-go.
CLIENT_EXTERNAL_APPLY := k8s.io/api/core/v1.PodSpec:k8s.io/client-go/applyconfigurations/core/v1,$\
	k8s.io/api/autoscaling/v2.MetricSpec:k8s.io/client-go/applyconfigurations/autoscaling/v2,$\
	k8s.io/api/resource/v1.ResourceClaimTemplateSpec:k8s.io/client-go/applyconfigurations/resource/v1

.PHONY: clients
clients: ## Regenerate pkg/client: clientset, listers, informers and apply configurations (code-generator v0.37.1 via go tool).
	@rm -rf pkg/client/applyconfiguration pkg/client/clientset pkg/client/listers pkg/client/informers hack/clientgen/openapi
	@# The apply configurations embed each kind's structured-merge schema (the fake clientset's
	@# apply and the Extract functions need it): OpenAPI definitions of the Grove types
	@# (openapi-gen) and of the Kubernetes types they embed, written out by hack/clientgen/schema.
	$(GO) tool openapi-gen --go-header-file hack/boilerplate.go.txt --report-filename /dev/null \
		--output-dir hack/clientgen/openapi --output-pkg github.com/ai-dynamo/grove/hack/clientgen/openapi \
		--output-file zz_generated.openapi.go $(CLIENT_INPUTS)
	@schema=$$(mktemp) && trap 'rm -f "$$schema"' EXIT && $(GO) run ./hack/clientgen/schema >"$$schema" && \
	echo "go tool applyconfiguration-gen ..." && \
	$(GO) tool applyconfiguration-gen --go-header-file hack/boilerplate.go.txt --openapi-schema "$$schema" \
		--external-applyconfigurations '$(CLIENT_EXTERNAL_APPLY)' \
		--output-dir pkg/client/applyconfiguration --output-pkg $(CLIENT_PKG)/applyconfiguration $(CLIENT_INPUTS)
	$(GO) tool client-gen --go-header-file hack/boilerplate.go.txt --clientset-name versioned \
		--input-base $(API_PKG) $(addprefix --input ,$(CLIENT_GROUPS)) \
		--apply-configuration-package $(CLIENT_PKG)/applyconfiguration \
		--output-dir pkg/client/clientset --output-pkg $(CLIENT_PKG)/clientset
	$(GO) tool lister-gen --go-header-file hack/boilerplate.go.txt \
		--output-dir pkg/client/listers --output-pkg $(CLIENT_PKG)/listers $(CLIENT_INPUTS)
	$(GO) tool informer-gen --go-header-file hack/boilerplate.go.txt \
		--versioned-clientset-package $(CLIENT_PKG)/clientset/versioned --listers-package $(CLIENT_PKG)/listers \
		--output-dir pkg/client/informers --output-pkg $(CLIENT_PKG)/informers $(CLIENT_INPUTS)

.PHONY: verify
verify: crd-ref-docs ## Fail when generated files or the API reference are stale, go.mod is untidy, code is unformatted or a doc link is broken.
	@CRD_REF_DOCS=$(BIN)/crd-ref-docs ./hack/verify.sh

.PHONY: docs
docs: crd-ref-docs ## Regenerate the API reference docs/reference/api/ from pkg/api (crd-ref-docs), then check every doc link.
	@rm -f docs/reference/api/*.md
	./hack/api-docs/generate.sh $(BIN)/crd-ref-docs docs/reference/api
	@$(GO) run ./hack/mdlinks README.md docs

# crd-ref-docs renders the API reference; pinned in its own module (hack/tools/crd-ref-docs)
# like golangci-lint, and rebuilt only when that pin changes.
CRD_REF_DOCS_PIN   := $(shell sha256sum hack/tools/crd-ref-docs/go.mod | cut -c1-12)
CRD_REF_DOCS_STAMP := $(BIN)/.crd-ref-docs-$(CRD_REF_DOCS_PIN)

.PHONY: crd-ref-docs
crd-ref-docs: $(CRD_REF_DOCS_STAMP) ## Build crd-ref-docs (pinned in hack/tools/crd-ref-docs) into bin/.

$(CRD_REF_DOCS_STAMP):
	@mkdir -p $(BIN)
	cd hack/tools/crd-ref-docs && $(GO) build -o $(BIN)/crd-ref-docs github.com/elastic/crd-ref-docs
	@rm -f $(BIN)/.crd-ref-docs-* && touch $@

.PHONY: lint
lint: golangci-lint ## golangci-lint v2 (.golangci.yml) on the module and gangwatch.
	$(BIN)/golangci-lint run ./...
	cd e2e/bench/gangwatch && $(BIN)/golangci-lint run --config $(ROOT)/.golangci.yml ./...

# golangci-lint is pinned in its own module (hack/tools/golangci-lint) so that its
# dependencies never touch Grove's go.mod; rebuilt only when that pin changes.
GOLANGCI_PIN   := $(shell sha256sum hack/tools/golangci-lint/go.mod | cut -c1-12)
GOLANGCI_STAMP := $(BIN)/.golangci-lint-$(GOLANGCI_PIN)

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_STAMP) ## Build golangci-lint (pinned in hack/tools/golangci-lint) into bin/.

$(GOLANGCI_STAMP):
	@mkdir -p $(BIN)
	cd hack/tools/golangci-lint && $(GO) build -o $(BIN)/golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	@rm -f $(BIN)/.golangci-lint-* && touch $@

##@ Demo

.PHONY: demo
demo: ## Show Grove placing gangs on 64 simulated GPU nodes; leaves the environment up.
	@echo ">> [1/5] control-plane binaries: etcd, kube-apiserver, kube-controller-manager"
	@$(MAKE) -s k8s-bins
	@echo ">> [2/5] building grove-operator and grove-scheduler"
	@$(MAKE) -s build
	@echo ">> [3/5] building kwok"
	@$(MAKE) -s kwok
	@echo ">> [4/5] building grove-demo"
	@$(GO) build -o $(BIN)/grove-demo ./e2e/cmd/grove-demo
	@echo ">> [5/5] running the demo"
	@$(BIN)/grove-demo up --state-dir $(ROOT)/.demo

.PHONY: demo-down
demo-down: ## Stop the demo environment and every process it started.
	@$(GO) build -o $(BIN)/grove-demo ./e2e/cmd/grove-demo
	@$(BIN)/grove-demo down --state-dir $(ROOT)/.demo

##@ Test

.PHONY: test
test: k8s-bins build kwok ## Unit and integration tests against a real etcd + kube-apiserver + kube-controller-manager.
	$(GO) test -timeout $(TEST_TIMEOUT) ./...
	cd e2e/bench/gangwatch && $(GO) test ./...

.PHONY: prometheus
prometheus: ## Install Prometheus (Debian's package) when missing: the metrics scenario scrapes both programs with it.
	@command -v prometheus >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus; }

.PHONY: e2e
e2e: k8s-bins build kwok prometheus ## End-to-end scenarios: operator and scheduler as processes, kwok nodes, a real Prometheus.
	$(GO) test -tags e2e -timeout 40m -count=1 ./e2e/scenarios/...

# make e2e-install: the install proven on a real node (internal/testenv/realnode: kubelet,
# containerd, runc, CNI bridge) next to kwok nodes. Images of two versions (N and N+1, for the
# upgrade) are built for this machine's platform only; the suite imports them into the node.
E2E_INSTALL_VERSIONS ?= v0.1.0-e2e.1 v0.1.0-e2e.2
E2E_INSTALL_IMAGES   := $(BIN)/images-e2e

.PHONY: e2e-install
e2e-install: k8s-bins realnode-bins realnode-deps kwok ## Install Grove with its Helm chart on a real node (kubelet + containerd): pods, workloads, upgrade, uninstall. Needs root.
	@rm -rf $(E2E_INSTALL_IMAGES)
	@for v in $(E2E_INSTALL_VERSIONS); do \
		$(MAKE) -s images VERSION=$$v PLATFORMS=linux/$$($(GO) env GOARCH) IMAGE_DIR=$(E2E_INSTALL_IMAGES)/$$v || exit 1; \
	done
	@# -p 1: each package runs its own real node, and there is one CNI bridge per machine.
	GROVE_INSTALL_VERSIONS="$(E2E_INSTALL_VERSIONS)" GROVE_INSTALL_IMAGE_DIR=$(E2E_INSTALL_IMAGES) \
		$(GO) test -tags e2einstall -p 1 -timeout 20m -count=1 -v ./internal/testenv/realnode/ ./e2e/install/

.PHONY: test-unit
test-unit: ## Unit tests only (no control plane).
	$(GO) test -short ./...

##@ Local control plane

.PHONY: k8s-bins
k8s-bins: $(K8S_STAMP) ## Build etcd v3.7.0, kube-apiserver and kube-controller-manager v1.37.1 into bin/.

$(K8S_STAMP):
	@mkdir -p $(BIN)
	@echo ">> [1/2] building kube-apiserver and kube-controller-manager $(K8S_VERSION) (first build: ~6-9 minutes on 2 cores)"
	$(GO) build -ldflags "$(K8S_LDFLAGS)" -o $(BIN)/ k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
	@echo ">> [2/2] building etcd v3.7.0"
	$(GO) build -o $(BIN)/etcd go.etcd.io/etcd/server/v3
	@rm -f $(BIN)/.k8s-bins-* && touch $@

# A real node's programs: Debian packages (installed when missing) and the kubelet (plus the
# kube-scheduler that places the install test's Grove pods) built from the pinned module.
REALNODE_PACKAGES := containerd runc containernetworking-plugins busybox-static iptables
REALNODE_STAMP    := $(BIN)/.realnode-bins-$(K8S_PINS)

.PHONY: realnode-deps
realnode-deps: ## Install containerd, runc, the CNI plugins, busybox-static and iptables (Debian packages) when missing.
	@missing=""; for p in $(REALNODE_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi

.PHONY: realnode-bins
realnode-bins: $(REALNODE_STAMP) ## Build kubelet and kube-scheduler v1.37.1 into bin/ (only when go.mod changed).

$(REALNODE_STAMP):
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(K8S_LDFLAGS)" -o $(BIN)/ k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler
	@rm -f $(BIN)/.realnode-bins-* && touch $@

.PHONY: cluster-up
cluster-up: k8s-bins ## Start etcd + kube-apiserver + kube-controller-manager in the background; prints the kubeconfig.
	@$(GO) build -o $(BIN)/grove-cluster ./e2e/cmd/grove-cluster
	@$(BIN)/grove-cluster up --state-dir $(ROOT)/.cluster

.PHONY: cluster-down
cluster-down: ## Stop the control plane started by cluster-up.
	@$(GO) build -o $(BIN)/grove-cluster ./e2e/cmd/grove-cluster
	@$(BIN)/grove-cluster down --state-dir $(ROOT)/.cluster

##@ Benchmark

# make bench: BENCH_FILTER selects workloads by label (performance,-large skips 5000 nodes).
BENCH_FILTER  ?= performance
BENCH_RESULTS ?= $(ROOT)/results/tmp/bench
BENCH_TIMEOUT ?= 90m
# BENCH_ROUNDS>1 repeats the whole run; benchratio then also reports each workload's median ratio.
BENCH_ROUNDS  ?= 1

.PHONY: bench
bench: k8s-bins ## scheduler_perf: grove-scheduler on gangs vs kube-scheduler's default profile, with throughput ratios.
	@mkdir -p $(BENCH_RESULTS)
	@rm -f $(BENCH_RESULTS)/BenchmarkPerfScheduling_benchmark_grove_*.json $(BENCH_RESULTS)/stuck_*.json $(BENCH_RESULTS)/placement_*.json
	for round in $$(seq $(BENCH_ROUNDS)); do \
		(cd e2e/bench && PATH="$(BIN):$$PATH" ARTIFACTS=$(BENCH_RESULTS) $(GO) test -run '^$$' -bench BenchmarkPerfScheduling \
			-benchtime 1x -timeout $(BENCH_TIMEOUT) . -args -perf-scheduling-label-filter=$(BENCH_FILTER) \
			-data-items-dir=$(BENCH_RESULTS) -with-data-items-unique-id=false) || exit 1; \
	done
	$(GO) run ./e2e/bench/benchratio $(BENCH_RESULTS)/BenchmarkPerfScheduling_benchmark_grove_*.json

# make bench-operator: grove-operator and apply-to-running times against a raw client and a
# Deployment in the same run (e2e/bench/operator); BENCH_OPERATOR_SCALE=small is a quick smoke run,
# BENCH_OPERATOR_WORKLOADS (replicas,disagg,small,recovery; all when empty) a subset of the workloads.
BENCH_OPERATOR_SCALE     ?= full
BENCH_OPERATOR_WORKLOADS ?=
BENCH_OPERATOR_RESULTS   ?= results/operator

.PHONY: bench-operator
bench-operator: k8s-bins build kwok ## grove-operator end to end (PCS → pods, gangs, gates, bound, Ready) vs raw pods and a Deployment; writes results/operator.
	@test -x $(BIN)/kube-scheduler || $(GO) build -ldflags "$(K8S_LDFLAGS)" -o $(BIN)/ k8s.io/kubernetes/cmd/kube-scheduler
	BENCH_OPERATOR_SCALE=$(BENCH_OPERATOR_SCALE) BENCH_OPERATOR_WORKLOADS=$(BENCH_OPERATOR_WORKLOADS) $(GO) run ./e2e/bench/operator -out $(BENCH_OPERATOR_RESULTS) \
		-command "make bench-operator BENCH_OPERATOR_SCALE=$(BENCH_OPERATOR_SCALE)$(if $(BENCH_OPERATOR_WORKLOADS), BENCH_OPERATOR_WORKLOADS=$(BENCH_OPERATOR_WORKLOADS))"

# make bench-compare: Baseline / Grove / Native in e2e/bench/compare (this module), then
# scheduler-plugins' Coscheduling (its own module, make bench-coscheduling), then benchcompare
# writes $(BENCH_COMPARE_RESULTS)/RESULTS.md from the raw JSON next to it.
# BENCH_COMPARE_FILTER selects workloads by label: compare (500 nodes), large (5000 nodes),
# compare-smoke (seconds). BENCH_COMPARE_DEADLINE bounds the run-to-completion workload.
# BENCH_COMPARE_ROUNDS runs each module that many times; RESULTS.md shows the means.
BENCH_COMPARE_FILTER   ?= compare
BENCH_COMPARE_RESULTS  ?= $(ROOT)/results/compare
BENCH_COMPARE_DEADLINE ?= 2m
BENCH_COMPARE_ROUNDS   ?= 1

.PHONY: bench-compare
bench-compare: k8s-bins ## scheduler_perf: kube-scheduler vs grove-scheduler vs native 1.37 gangs vs coscheduling; writes results/compare/RESULTS.md.
	@mkdir -p $(BENCH_COMPARE_RESULTS)
	@rm -f $(BENCH_COMPARE_RESULTS)/BenchmarkPerfScheduling_benchmark_*.json $(BENCH_COMPARE_RESULTS)/gangwatch_*.json
	for round in $$(seq $(BENCH_COMPARE_ROUNDS)); do \
		(cd e2e/bench/compare && PATH="$(BIN):$$PATH" ARTIFACTS=$(BENCH_COMPARE_RESULTS) BENCH_COMPARE_DEADLINE=$(BENCH_COMPARE_DEADLINE) \
			$(GO) test -run '^$$' -bench BenchmarkPerfScheduling -benchtime 1x -timeout $(BENCH_TIMEOUT) . \
			-args -perf-scheduling-label-filter=$(BENCH_COMPARE_FILTER) -data-items-dir=$(BENCH_COMPARE_RESULTS)) || exit 1; \
	done
	$(MAKE) bench-coscheduling
	$(GO) run ./e2e/bench/benchcompare -dir $(BENCH_COMPARE_RESULTS) -out $(BENCH_COMPARE_RESULTS)/RESULTS.md \
		-command "make bench-compare BENCH_COMPARE_FILTER=$(BENCH_COMPARE_FILTER) BENCH_COMPARE_DEADLINE=$(BENCH_COMPARE_DEADLINE) BENCH_COMPARE_ROUNDS=$(BENCH_COMPARE_ROUNDS)"

# scheduler-plugins' Coscheduling v0.34.7 builds only against Kubernetes 1.34, so it is its own
# Go module (e2e/bench/compare/coscheduling) with its own scheduler_perf and a same-run Baseline.
.PHONY: bench-coscheduling
bench-coscheduling: k8s-bins ## scheduler_perf: scheduler-plugins Coscheduling (k8s 1.34) on the comparison's workloads.
	@mkdir -p $(BENCH_COMPARE_RESULTS)
	@rm -f $(BENCH_COMPARE_RESULTS)/BenchmarkPerfScheduling_benchmark_coscheduling_*.json $(BENCH_COMPARE_RESULTS)/gangwatch_coscheduling_*.json
	for round in $$(seq $(BENCH_COMPARE_ROUNDS)); do \
		(cd e2e/bench/compare/coscheduling && PATH="$(BIN):$$PATH" ARTIFACTS=$(BENCH_COMPARE_RESULTS) BENCH_COMPARE_DEADLINE=$(BENCH_COMPARE_DEADLINE) \
			$(GO) test -run '^$$' -bench BenchmarkPerfScheduling -benchtime 1x -timeout $(BENCH_TIMEOUT) . -args \
			-perf-scheduling-label-filter=$(BENCH_COMPARE_FILTER) -data-items-dir=$(BENCH_COMPARE_RESULTS)) || exit 1; \
	done
