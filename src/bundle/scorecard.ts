/**
 * The scorecard configuration, laid out as operator-sdk lays it out: `config/scorecard/` is a
 * kustomize tree (an empty stage in bases/config.yaml, one JSON patch per suite adding its tests)
 * that config/manifests includes, and `generate bundle` writes the Configuration it finds in the
 * kustomize output to `bundle/tests/scorecard/config.yaml` (the default one when there is none).
 */
import { stringify } from 'yaml';
import { create, type Plan } from '../machinery/index.js';
import type { K8sObject } from './types.js';

export const SCORECARD_API_VERSION = 'scorecard.operatorframework.io/v1alpha3';
/** operator-sdk v1.42.3's scorecard-test image, the version our validators match (ADR 17). */
const SCORECARD_IMAGE = 'quay.io/operator-framework/scorecard-test:v1.42.3';

const SUITES = {
  basic: ['basic-check-spec'],
  olm: ['olm-bundle-validation', 'olm-crds-have-validation', 'olm-crds-have-resources', 'olm-spec-descriptors', 'olm-status-descriptors'],
} as const;
type Suite = keyof typeof SUITES;

const scorecardTest = (suite: Suite, name: string): Record<string, unknown> => ({
  entrypoint: ['scorecard-test', name],
  image: SCORECARD_IMAGE,
  labels: { suite, test: `${name}-test` },
});

const configuration = (tests: readonly Record<string, unknown>[]): Record<string, unknown> => ({
  apiVersion: SCORECARD_API_VERSION,
  kind: 'Configuration',
  metadata: { name: 'config' },
  stages: [{ parallel: true, tests }],
});

const yaml = (o: unknown): string => stringify(o, { lineWidth: 0, aliasDuplicateObjects: false });

export const isScorecardConfig = (o: K8sObject): boolean => o.apiVersion === SCORECARD_API_VERSION && o.kind === 'Configuration';

/** bundle/tests/scorecard/config.yaml: the Configuration config/scorecard rendered, else the default (basic + olm suites). */
export function scorecardConfig(fromKustomize?: K8sObject): string {
  if (fromKustomize !== undefined) return yaml(fromKustomize);
  return yaml(configuration((Object.keys(SUITES) as Suite[]).flatMap((s) => SUITES[s].map((t) => scorecardTest(s, t)))));
}

/** config/scorecard: written only when absent, like the base CSV (the tests are the user's to choose). */
export function scorecardKustomize(dir = 'config/scorecard'): Plan {
  const patch = (suite: Suite): string =>
    yaml(SUITES[suite].map((t) => ({ op: 'add', path: '/stages/0/tests/-', value: scorecardTest(suite, t) })));
  const target = { group: 'scorecard.operatorframework.io', version: 'v1alpha3', kind: 'Configuration', name: 'config' };
  const kustomization = `# The scorecard tests \`generate bundle\` writes to bundle/tests/scorecard/config.yaml (operator-sdk's
# layout): the base has one empty parallel stage, each patch adds a suite's tests.
${yaml({ resources: ['bases/config.yaml'], patches: (Object.keys(SUITES) as Suite[]).map((s) => ({ path: `patches/${s}.config.yaml`, target })) })}`;
  return [
    create(`${dir}/bases/config.yaml`, yaml(configuration([])), 'skip'),
    create(`${dir}/kustomization.yaml`, kustomization, 'skip'),
    ...(Object.keys(SUITES) as Suite[]).map((s) => create(`${dir}/patches/${s}.config.yaml`, patch(s), 'skip')),
  ];
}
