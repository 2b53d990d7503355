# OLM's olm-operator and catalog-operator (hack/tools.sh olm: OLM built from source at the pinned
# version) on the Debian stand-in base, where upstream's quay.io/operator-framework/olm has them: /bin/olm
# and /bin/catalog, so a Deployment written for one runs the other. hack/olm-images.sh builds and
# pushes it; it is not upstream's image (no package-server, cpb or copy-content): never push it elsewhere.
FROM debian:bookworm-slim
COPY olm catalog /bin/
USER 65532:65532
LABEL io.helm-operator.stand-in=olm
ENTRYPOINT ["/bin/olm"]
