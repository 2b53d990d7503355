/**
 * The operator-sdk Helm tutorial as docs/tutorial.md gives it (the README shows its first steps):
 * the tutorial tier runs these very commands (tutorial.test.ts) up to `make bundle`, and a unit test
 * (test/unit/project/tutorial-docs.test.ts) checks that the page's block lists exactly them, in
 * this order. The chart repository URL is the page's; the tier substitutes the one it serves.
 */
const IMG = 'example.com/nginx-operator:v0.0.1';

export const T = {
  repoUrl: 'http://127.0.0.1:8879',
  tarball: 'helm-operator-ts-0.1.0.tgz',
  img: IMG,
  sample: 'nginx-sample',
  containerName: 'nginx-operator',

  installCli: 'npm install -g ./helm-operator-ts-0.1.0.tgz',
  mkdir: 'mkdir nginx-operator && cd nginx-operator',
  init: 'helm-operator init --domain aiops.org --plugins=helm',
  createApi: 'helm-operator create api --group web --version v1 --kind Nginx --helm-chart-repo http://127.0.0.1:8879 --helm-chart nginx',
  clusterUp: 'eval "$(make -s cluster-up)"',
  install: 'make install',
  run: 'make run',
  toolsEnv: 'eval "$(bash node_modules/helm-operator-ts/hack/tools.sh env 2>/dev/null)"',
  applySample: 'kubectl apply -k config/samples',
  waitSample: 'kubectl wait nginx/nginx-sample --for=condition=Ready --timeout=5m',
  getSample: 'kubectl get nginxes',
  dockerBuild: `make docker-build IMG=${IMG}`,
  imageEnv: 'eval "$(bash node_modules/helm-operator-ts/hack/image.sh env)"',
  flatKubeconfig: 'kubectl config view --raw --flatten --minify > operator.kubeconfig && chmod 0640 operator.kubeconfig',
  podmanRun: `podman run --rm --name nginx-operator --network=host -v "$PWD/operator.kubeconfig:/kube/config:ro" ${IMG} --kubeconfig=/kube/config`,
  deleteSample: 'kubectl delete -k config/samples',
  deploy: `make deploy IMG=${IMG}`,
  waitDeploy: 'kubectl -n nginx-operator-system wait deployment/nginx-operator-controller-manager --for=condition=Available --timeout=3m',
  undeploy: 'make undeploy',
  bundle: `make bundle IMG=${IMG}`,
  registryUp: 'eval "$(make -s registry-up)"',
  bundlePush: 'make bundle-build bundle-push IMAGE_TAG_BASE=$REGISTRY/nginx-operator',
  catalog: 'make catalog IMAGE_TAG_BASE=$REGISTRY/nginx-operator',
  olmInstall: 'helm-operator olm install',
  runBundle: 'helm-operator run bundle ./bundle',
  cleanup: 'helm-operator cleanup nginx-operator',
  registryDown: 'make registry-down',
} as const;

/** The docs/tutorial.md block's commands, in order (what a reader types; the tier runs each). */
export const TUTORIAL_SCRIPT: readonly string[] = [
  T.installCli,
  T.mkdir,
  T.init,
  T.createApi,
  T.createApi,
  T.clusterUp,
  T.install,
  T.run,
  T.toolsEnv,
  T.applySample,
  T.waitSample,
  T.getSample,
  T.dockerBuild,
  T.imageEnv,
  T.flatKubeconfig,
  T.podmanRun,
  T.deleteSample,
  T.deploy,
  T.waitDeploy,
  T.undeploy,
  T.bundle,
  T.registryUp,
  T.bundlePush,
  T.catalog,
  T.olmInstall,
  T.runBundle,
  T.cleanup,
  T.registryDown,
];

/**
 * The page's commands after `make bundle`, which the tutorial tier does not run: CI installs OLM
 * once, in the real-node tier, and the registry, bundle image and catalog steps lead only to it.
 * Each names the test files that run it or the same recipe (the unit test checks that they exist
 * and that these are the page's last commands, in order).
 */
export const NOT_RUN_HERE: readonly { readonly command: string; readonly coveredBy: readonly string[] }[] = [
  // The scaffolded Makefile's registry-up runs `hack/registry.sh up`, as the real-node tier does.
  { command: T.registryUp, coveredBy: ['test/real-node/node.ts'] },
  { command: T.bundlePush, coveredBy: ['test/real-node/olm.suite.ts'] },
  { command: T.catalog, coveredBy: ['test/real-node/olm.suite.ts'] },
  { command: T.olmInstall, coveredBy: ['test/real-node/olm.suite.ts', 'test/olm/cli.suite.ts'] },
  { command: T.runBundle, coveredBy: ['test/olm/cli.suite.ts', 'test/real-node/olm.suite.ts'] },
  { command: T.cleanup, coveredBy: ['test/real-node/olm.suite.ts', 'test/olm/cli.suite.ts'] },
  { command: T.registryDown, coveredBy: ['test/real-node/node.ts'] },
];
