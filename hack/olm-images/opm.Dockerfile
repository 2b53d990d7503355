# opm (hack/tools.sh olm-validate: operator-registry's opm at the pinned version) on the Debian
# stand-in base, at /bin/opm as in upstream's quay.io/operator-framework/opm: what `run bundle`'s
# registry pod runs (`opm serve`). hack/olm-images.sh builds and pushes it; not upstream's image
# (no grpc_health_probe: the registry pod's probes are TCP): never push it elsewhere.
FROM debian:bookworm-slim
COPY opm /bin/opm
USER 65532:65532
LABEL io.helm-operator.stand-in=opm
ENTRYPOINT ["/bin/opm"]
