# Helm-backed Kubernetes operator. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# Every target runs on the pinned Node 24 (fetched from the npm registry into the cache when the
# system's node is older) and on the helm/kubectl the project pins.
NODE_DIR := $(shell bash hack/tools.sh node-dir)
export PATH := $(NODE_DIR):$(PATH)
TOOLS_ENV = eval "$$(bash hack/tools.sh env)"

# The operator image: what docker-build tags, docker-push pushes, and deploy / build-installer run.
IMG ?= controller:latest
# What deploy and undeploy apply: config/default (one leader), or config/sharding (3 replicas sharing
# the namespaces with --sharding; docs/production.md "Sharding").
DEPLOY_CONFIG ?= config/default
WATCHES_FILE ?= watches.yaml
# docker or podman (anything with `build -t` and `push`).
CONTAINER_TOOL ?= docker
# podman as this machine needs it (hack/image.sh env); nothing for docker.
PODMAN_ENV = $(if $(filter podman,$(CONTAINER_TOOL)),eval "$$(bash hack/image.sh env)";)
DOCKERFILE_UTILS_VERSION ?= 0.16.3
# `make undeploy ignore-not-found=true` / `make uninstall ignore-not-found=true`: no error for objects already gone.
ignore-not-found ?= false
# REAL_NODE=1: cluster-up adds a real node (root; docs/real-node.md), deploy puts the operator on it.
REAL_NODE ?=
# podman speaks plain HTTP to a registry on this machine (hack/registry.sh) only when told to.
PUSH_FLAGS ?= $(if $(and $(filter podman,$(CONTAINER_TOOL)),$(filter 127.0.0.1:% localhost:%,$(IMG))),--tls-verify=false)

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: deps
deps: node_modules/.installed ## Install npm dependencies (npm ci, from the lockfile).

.PHONY: tools
tools: ## Build or fetch helm, kubectl and the test control plane binaries into the cache.
	bash hack/tools.sh all

.PHONY: build
build: deps ## Compile the TypeScript into dist/.
	npm run build --silent

.PHONY: pack
pack: deps ## Write the package tarball helm-operator-ts-<version>.tgz (npm pack; prepack builds dist/): install it with npm install -g ./<tgz>.
	npm pack --loglevel=error

.PHONY: format
format: deps ## Format the project's TypeScript and JavaScript with prettier (what `make lint` checks).
	npm run --silent format

.PHONY: lint
# The caches live in node_modules/.cache (prettier's and dependency-cruiser's too), so a fresh clone (CI) lints everything from scratch. ESLint's
# cache keys on each file's content: a type change in one file can hide a typed-lint finding in
# another, unchanged one until that one changes too (or `rm -rf node_modules/.cache/eslint`).
LINT_CACHE := node_modules/.cache

lint: deps ## Check formatting (prettier), lint and type-check, and check the import rules (docs/adr/0048-import-rules.md); cached between runs.
	npm run --silent format:check
	npm run --silent lint:imports -- --cache $(LINT_CACHE)/dependency-cruiser --cache-strategy content
	npx tsc -p tsconfig.json --noEmit --incremental --tsBuildInfoFile $(LINT_CACHE)/tsc/tsconfig.tsbuildinfo
	npx eslint --cache --cache-strategy content --cache-location $(LINT_CACHE)/eslint/ .

# Lint runs beside the tests, at a lower CPU priority, instead of before them: the integration tier
# mostly waits on the API server, so lint's few CPU-minutes leave the critical path. Its output is
# printed, and fails the target, once the tests are done.
.PHONY: test
test: deps tools ## Run all tests: lint (beside the tests), unit, then integration and e2e against a real control plane.
	@lint_log=$$(mktemp -t make-lint.XXXXXX); \
	nice -n 10 $(MAKE) --no-print-directory lint >"$$lint_log" 2>&1 & lint_pid=$$!; \
	status=0; npx vitest run --project unit --project middle --project integration --project integration-serial || status=$$?; \
	if wait "$$lint_pid"; then echo "make lint: passed"; rm -f "$$lint_log"; \
	else cat "$$lint_log"; echo "failed test: make lint (its output is above; the log in $$lint_log)"; status=1; fi; \
	exit "$$status"

.PHONY: test-image
test-image: deps tools ## Root: build the operator image with podman, push it, and run it in-cluster on a real node (test/real-node/image.suite.ts).
	bash hack/tools.sh real-node
	npx vitest run --project real-node -t 'builds the image and pushes it|the operator image'

.PHONY: test-olm
test-olm: deps tools ## OLM (built from source) as local processes, one install for every suite (test/olm/tier.test.ts; its own control plane); OLM as pods is in test-real-node.
	bash hack/tools.sh olm
	npx vitest run --project olm

.PHONY: test-sharded-apiserver
test-sharded-apiserver: deps tools ## Informers ask kube-apiserver (ShardedListAndWatch on; its own control plane) for their share (docs/adr/0103).
	npx vitest run --project sharded-apiserver

.PHONY: test-tutorial
test-tutorial: deps tools ## The operator-author tutorial (docs/tutorial.md) from `npm pack`, step by step: init, create api, make run, docker-build (podman), deploy, make bundle and its validation (its own control plane; OLM is the real-node tier's); then the scaffold end-to-end files (every chart source, make run/deploy/bundle of scaffolded projects).
	npx vitest run --project tutorial --project scaffold-e2e

.PHONY: test-chaos
test-chaos: deps tools ## Fault-injection and fuzz tier on its own control plane (kills the apiserver/etcd, the operator, helm); prints its report.
	npx vitest run --project chaos --project chaos-alone

.PHONY: test-redteam
test-redteam: deps tools ## Red-team tier on its own control plane: a tenant's attacks (crash, starve, escalate, read, leak, takeover) on the operator process in the recommended and the default configuration; prints "N attacks, N held".
	npx vitest run --project redteam

.PHONY: test-real-node
test-real-node: deps tools ## Root: on a control plane with a real node (its own): the tutorial's deploy, the image, leader election, rolling update, OOM kill, sharded replicas, OLM as pods with the bundle image and catalog, a scaffolded project's operator as real pods (docs/real-node.md).
	bash hack/tools.sh real-node
	npx vitest run --project real-node

.PHONY: test-unit
test-unit: deps ## Run the unit tests only (no cluster).
	npx vitest run --project unit

.PHONY: test-integration
test-integration: deps tools ## Run the middle tier, integration and e2e tests (starts a control plane unless TEST_KUBECONFIG is set): three files at a time, then the few that run alone.
	npx vitest run --project middle --project integration --project integration-serial

.PHONY: bench
bench: deps tools ## Run the benchmarks.
	npm run --silent bench

.PHONY: bench-scale
bench-scale: deps ## Opt-in: steady state at N=10,000 CRs of a light chart beside operator-sdk (hours; BENCH_ARGS="--n 2000").
	npm run --silent bench -- --scale $(BENCH_ARGS)

.PHONY: bench-compare
bench-compare: deps ## Side by side with operator-sdk's helm-operator, N=100 and N=1000 (builds it once; BENCH_ARGS="--n 20 --idle-seconds 20").
	npm run --silent bench -- --compare $(BENCH_ARGS)

.PHONY: run
run: build ## Run the operator against the current kube context, or a local test control plane when none is reachable.
	WATCHES_FILE=$(WATCHES_FILE) bash hack/run.sh

##@ Test control plane

.PHONY: cluster-up
cluster-up: ## Start a local control plane (etcd, apiserver, controller-manager, scheduler, kwok) on 127.0.0.1; prints `export KUBECONFIG=...`. REAL_NODE=1: and a real node.
	@bash hack/cluster.sh up --export $(if $(REAL_NODE),--real-node)

.PHONY: cluster-down
cluster-down: ## Stop the local control plane.
	@bash hack/cluster.sh down

##@ Build

.PHONY: docker-build
docker-build: ## Build the operator image IMG with CONTAINER_TOOL (Dockerfile; linux/amd64).
ifeq ($(CONTAINER_TOOL),podman)
	@# hack/image.sh: podman set up for this machine, and stand-in base images when no registry serves them.
	bash hack/image.sh build $(IMG)
else
	$(CONTAINER_TOOL) build -t $(IMG) .
endif

.PHONY: image-base
image-base: ## With podman: make the Dockerfile's base images available, building stand-ins when no registry serves them.
	bash hack/image.sh base

.PHONY: docker-push
docker-push: ## Push the operator image IMG with CONTAINER_TOOL (plain HTTP to a registry on 127.0.0.1 or localhost).
	$(PODMAN_ENV) $(CONTAINER_TOOL) push $(PUSH_FLAGS) $(IMG)

.PHONY: docker-lint
docker-lint: ## Lint the Dockerfile (dockerfile-utils from the npm registry) and check its invariants.
	npx --yes dockerfile-utils@$(DOCKERFILE_UTILS_VERSION) lint Dockerfile
	npx vitest run --project unit test/unit/project

.PHONY: build-installer
build-installer: ## Write dist/install.yaml: the CRDs and the operator with image IMG, for one `kubectl apply -f`.
	@mkdir -p dist
	bash hack/kustomize.sh build config/default $(IMG) > dist/install.yaml.tmp
	@mv dist/install.yaml.tmp dist/install.yaml
	@echo "wrote dist/install.yaml (image $(IMG))"

##@ Deployment

.PHONY: install
install: ## Install the CRDs (config/crd) into the cluster of KUBECONFIG (or the current context).
	bash hack/deploy.sh apply config/crd

.PHONY: uninstall
uninstall: ## Uninstall the CRDs: their custom resources first (needs the operator running), then the CRDs.
	IGNORE_NOT_FOUND=$(ignore-not-found) bash hack/deploy.sh delete config/crd

.PHONY: deploy
deploy: ## Deploy the operator with image IMG (DEPLOY_CONFIG, default config/default: namespace, CRDs, RBAC, Deployment, metrics Service; config/sharding: 3 sharded replicas). REAL_NODE=1: on the real node.
	REAL_NODE=$(REAL_NODE) bash hack/deploy.sh apply $(DEPLOY_CONFIG) $(IMG)

.PHONY: run-as-deployed
run-as-deployed: build ## Run the operator locally as the ServiceAccount deploy created (its RBAC exactly; for clusters that fake pods).
	WATCHES_FILE=$(WATCHES_FILE) bash hack/run-as-serviceaccount.sh

.PHONY: undeploy
undeploy: ## Remove everything deploy created: custom resources first (the operator uninstalls their releases), then the rest.
	IGNORE_NOT_FOUND=$(ignore-not-found) bash hack/deploy.sh delete $(DEPLOY_CONFIG)

##@ OLM bundle
# operator-sdk's variables and targets (copyable into a scaffolded project's Makefile). The pinned
# kubectl's kustomize renders config/manifests; opm comes from hack/tools.sh (olm-validate component).
VERSION ?= 0.0.1
CHANNELS ?=
BUNDLE_CHANNELS := $(if $(CHANNELS),--channels=$(CHANNELS))
DEFAULT_CHANNEL ?=
BUNDLE_DEFAULT_CHANNEL := $(if $(DEFAULT_CHANNEL),--default-channel=$(DEFAULT_CHANNEL))
BUNDLE_METADATA_OPTS ?= $(BUNDLE_CHANNELS) $(BUNDLE_DEFAULT_CHANNEL)
PACKAGE ?= helm-operator
IMAGE_TAG_BASE ?= example.com/helm-operator
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
USE_IMAGE_DIGESTS ?= false
# SHARDED_REPLICAS=N: the CSV's Deployment runs N replicas with --sharding (docs/olm.md, "N sharded replicas").
SHARDED_REPLICAS ?=
BUNDLE_GEN_FLAGS ?= --version $(VERSION) --package $(PACKAGE) $(BUNDLE_METADATA_OPTS) $(if $(filter true,$(USE_IMAGE_DIGESTS)),--use-image-digests) $(if $(SHARDED_REPLICAS),--sharded-replicas $(SHARDED_REPLICAS))
HELM_OPERATOR ?= npx tsx src/cli/main.ts

.PHONY: bundle
bundle: deps ## Generate bundle/ and bundle.Dockerfile for IMG and VERSION, then validate them (ours, then OLM's).
	$(HELM_OPERATOR) generate kustomize manifests --package $(PACKAGE)
	bash hack/kustomize.sh build config/manifests $(IMG) | $(HELM_OPERATOR) generate bundle $(BUNDLE_GEN_FLAGS)
	$(HELM_OPERATOR) bundle validate ./bundle --select-optional suite=operatorframework
	bash hack/tools.sh olm-validate
	$$(bash hack/tools.sh path olm-validate)/olm-validate --select-optional suite=operatorframework ./bundle >/dev/null

.PHONY: bundle-build
bundle-build: ## Build the bundle image BUNDLE_IMG with CONTAINER_TOOL (its context: bundle/ only).
	$(PODMAN_ENV) $(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: bundle-push
bundle-push: ## Push the bundle image BUNDLE_IMG.
	$(MAKE) docker-push IMG=$(BUNDLE_IMG)

# File-based catalog (not the deprecated SQLite index): catalog/<package>/catalog.yaml from BUNDLE_IMG,
# pulled from its registry (OPM_RENDER_FLAGS=--use-http for a plain-HTTP one, such as hack/tools.sh's
# registry), or from the bundle directory with no registry: make catalog CATALOG_BUNDLE=./bundle.
CATALOG_BUNDLE ?= $(BUNDLE_IMG)
OPM_RENDER_FLAGS ?=
.PHONY: catalog
catalog: ## Write the file-based catalog catalog/ holding BUNDLE_IMG or CATALOG_BUNDLE=./bundle (opm render + opm validate) and catalog.Dockerfile.
	bash hack/tools.sh olm-validate
	@rm -rf catalog catalog.Dockerfile && mkdir -p catalog/$(PACKAGE)
	printf -- '---\nschema: olm.package\nname: %s\ndefaultChannel: %s\n---\nschema: olm.channel\npackage: %s\nname: %s\nentries:\n  - name: %s.v%s\n' \
	  $(PACKAGE) $(or $(DEFAULT_CHANNEL),alpha) $(PACKAGE) $(or $(DEFAULT_CHANNEL),alpha) $(PACKAGE) $(VERSION) > catalog/$(PACKAGE)/catalog.yaml
	$$(bash hack/tools.sh path olm-validate)/opm render $(CATALOG_BUNDLE) $(OPM_RENDER_FLAGS) --output yaml >> catalog/$(PACKAGE)/catalog.yaml
	$$(bash hack/tools.sh path olm-validate)/opm validate catalog
	$$(bash hack/tools.sh path olm-validate)/opm generate dockerfile catalog
	printf '# The build context of catalog.Dockerfile: catalog/ only.\n*\n!catalog/\n' > catalog.Dockerfile.dockerignore

.PHONY: catalog-build
catalog-build: catalog ## Build the catalog image CATALOG_IMG from catalog/ with CONTAINER_TOOL.
	$(PODMAN_ENV) $(CONTAINER_TOOL) build -f catalog.Dockerfile -t $(CATALOG_IMG) .

.PHONY: catalog-push
catalog-push: ## Push the catalog image CATALOG_IMG.
	$(MAKE) docker-push IMG=$(CATALOG_IMG)
