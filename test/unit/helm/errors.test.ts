import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  classifyHelmError,
  explainFailure,
  HelmError,
  isHelmError,
  summarizeStderr,
  type HelmErrorReason,
} from '../../../src/helm/errors.js';

/**
 * stderr captured from the real binaries (test/unit/helm/fixtures/stderr-helm-*.json): `template`
 * on broken charts, a kubeconfig pointing at a closed port, the memory storage driver seeded
 * with releases (HELM_DRIVER=memory, HELM_MEMORY_DRIVER_DATA) for the release-state errors, and
 * the dev cluster (hack/cluster.sh) for the ownership conflict, v4's force-replace refusal, a
 * `--wait` timeout and a SIGTERM mid-install.
 */
const loadSamples = (file: string): Record<string, string> =>
  JSON.parse(readFileSync(new URL(`./fixtures/${file}`, import.meta.url), 'utf8')) as Record<string, string>;

const EXPECTED: Record<string, HelmErrorReason> = {
  schema: 'ValuesSchemaInvalid',
  required: 'RenderFailed',
  missingChart: 'ChartInvalid',
  badName: 'InvalidReleaseName',
  longName: 'InvalidReleaseName',
  noVersion: 'ChartInvalid',
  badChartYaml: 'ChartInvalid',
  badFunc: 'RenderFailed',
  badYaml: 'RenderFailed',
  unreachableStatus: 'KubernetesAPIError',
  unreachableInstall: 'KubernetesAPIError',
  noContext: 'KubernetesAPIError',
  badTimeout: 'Unknown',
  statusNotFound: 'ReleaseNotFound',
  historyNotFound: 'ReleaseNotFound',
  uninstallNotFound: 'ReleaseNotFound',
  rollbackNotFound: 'ReleaseNotFound',
  upgradeNotFound: 'ReleaseNotFound',
  nameInUse: 'ResourceConflict',
  reservedLabel: 'Unknown',
  inProgress: 'AnotherOperationInProgress',
  ownershipConflict: 'ResourceConflict',
  // `install --wait` on a PVC that never binds, with helm's --timeout 4s.
  waitTimeout: 'Timeout',
  // helm got SIGTERM mid-install (it cancels and records the revision as failed).
  sigterm: 'Canceled',
  // What helm 4 says to a bare --force-replace on a server-side-applied release (args.ts avoids it).
  forceReplaceWithSsa: 'Unknown',
  // A release whose stored revision exceeds the 1 MiB a Secret may hold (test/fixtures/charts/idioms/big, chunks=3).
  releaseTooLarge: 'ReleaseTooLarge',
  upgradeTooLarge: 'ReleaseTooLarge',
};

/**
 * helm 3 contacts the cluster before checking labels even on a client-side dry run, so its
 * "reservedLabel" sample is the unreachable-cluster error.
 */
const EXPECTED_OVERRIDES: Record<string, Record<string, HelmErrorReason>> = {
  'stderr-helm-v3.21.4.json': { reservedLabel: 'KubernetesAPIError' },
};

/** Summaries the v4 samples must produce (prefixes stripped, noise dropped, one line). */
const V4_SUMMARIES: Record<string, string> = {
  schema:
    "values don't meet the specifications of the schema(s) in the following chart(s): tiny: - at '/greeting': got number, want string",
  required: 'execution error at (tiny/templates/cm.yaml:8:8): fail was requested',
  missingChart: 'path "./nochart" not found',
  unreachableInstall:
    'cluster reachability check failed: kubernetes cluster unreachable: Get "https://127.0.0.1:1/version": dial tcp 127.0.0.1:1: connect: connection refused',
  upgradeNotFound: '"nope" has no deployed releases',
  inProgress: 'another operation (install/upgrade/rollback) is in progress',
  nameInUse: 'release name check failed: cannot reuse a name that is still in use',
  forceReplaceWithSsa: 'invalid operation: cannot use server-side apply and force replace together',
  waitTimeout:
    'resource PersistentVolumeClaim/hxt/t-v4-pvc not ready. status: InProgress, message: PVC is not Bound. phase: Pending context deadline exceeded',
};

const SAMPLE_FILES = ['stderr-helm-v4.1.4.json', 'stderr-helm-v3.21.4.json'].filter((f) =>
  existsSync(new URL(`./fixtures/${f}`, import.meta.url)),
);

describe.each(SAMPLE_FILES)('real stderr samples: %s', (file) => {
  const samples = loadSamples(file);
  const names = Object.keys(EXPECTED).filter((n) => n in samples);

  it.each(names)('%s', (name) => {
    const stderr = samples[name]!;
    expect(stderr).toMatch(/Error: /);
    expect(classifyHelmError(stderr, 1)).toBe(EXPECTED_OVERRIDES[file]?.[name] ?? EXPECTED[name]);
    const summary = summarizeStderr(stderr);
    expect(summary).not.toMatch(/^Error:|FAILED:|level=|\n|Use --debug/);
    expect(summary.length).toBeGreaterThan(10);
  });
});

describe('summarizeStderr on helm v4 samples', () => {
  const samples = loadSamples('stderr-helm-v4.1.4.json');
  it.each(Object.entries(V4_SUMMARIES))('%s', (name, expected) => {
    expect(summarizeStderr(samples[name]!)).toBe(expected);
  });
});

describe('classifyHelmError', () => {
  it('lets the runner flags win over the text', () => {
    const text = 'Error: UPGRADE FAILED: context canceled';
    expect(classifyHelmError(text, 1, { canceled: true, timedOut: true })).toBe('Canceled');
    expect(classifyHelmError(text, 1, { timedOut: true })).toBe('Timeout');
    expect(classifyHelmError('', undefined, { spawnFailed: true })).toBe('HelmNotFound');
    expect(classifyHelmError(text, 1)).toBe('Canceled');
  });

  it('recognises conflicts, timeouts and API failures from published helm texts', () => {
    // Published in user reports of helm 3 (the text is unchanged in helm 4's action package).
    const conflict =
      'Error: INSTALLATION FAILED: rendered manifests contain a resource that already exists. Unable to continue with install: ' +
      'ConfigMap "web-cm" in namespace "demo" exists and cannot be imported into the current release: invalid ownership metadata; ' +
      'label validation error: missing key "app.kubernetes.io/managed-by": must be set to "Helm"';
    expect(classifyHelmError(conflict, 1)).toBe('ResourceConflict');
    expect(classifyHelmError('Error: INSTALLATION FAILED: context deadline exceeded', 1)).toBe('Timeout');
    expect(classifyHelmError('Error: UPGRADE FAILED: timed out waiting for the condition', 1)).toBe('Timeout');
    expect(
      classifyHelmError(
        'Error: query: failed to query with labels: secrets is forbidden: User "system:serviceaccount:x:y" cannot list resource "secrets"',
        1,
      ),
    ).toBe('KubernetesAPIError');
    // text/template's wrapping of a lookup() the API server refused: the cluster failing, not the chart.
    const lookupForbidden =
      'Error: INSTALLATION FAILED: template: gate/templates/role.yaml:1:14: executing "gate/templates/role.yaml" at <lookup "v1" "ConfigMap" .Release.Namespace "marker">: ' +
      'error calling lookup: unable to get apiresource from unstructured: /v1, Kind=ConfigMap: configmaps "marker" is forbidden: User "system:serviceaccount:t:deployer" cannot get resource "configmaps" in API group "" in the namespace "t"';
    expect(classifyHelmError(lookupForbidden, 1)).toBe('KubernetesAPIError');
    // A template error that only mentions lookup stays the chart's.
    expect(
      classifyHelmError(
        'Error: template: gate/templates/role.yaml:1:14: executing "gate/templates/role.yaml" at <lookup "v1">: wrong number of args for lookup: want 4 got 1',
        1,
      ),
    ).toBe('RenderFailed');
    expect(classifyHelmError('Error: something nobody anticipated', 1)).toBe('Unknown');
    expect(classifyHelmError('', 2)).toBe('Unknown');
  });

  it('ignores v4 slog lines and deprecation warnings before the error', () => {
    const stderr =
      'Flag --force has been deprecated, use --force-replace instead\nlevel=WARN msg="x release: not found"\nError: UPGRADE FAILED: boom';
    expect(classifyHelmError(stderr, 1)).toBe('Unknown');
    expect(summarizeStderr(stderr)).toBe('boom');
  });
});

describe('summarizeStderr', () => {
  it('caps the length', () => {
    const s = summarizeStderr(`Error: ${'x'.repeat(5000)}`);
    expect(s).toHaveLength(1000);
    expect(s.endsWith('…')).toBe(true);
  });

  it('uses the non-noise lines when helm printed no Error: line', () => {
    expect(summarizeStderr('level=INFO msg="a"\n  panic:   something\n\n went wrong \n')).toBe('panic: something went wrong');
    expect(summarizeStderr('')).toBe('');
  });
});

describe('explainFailure', () => {
  const samples = loadSamples('stderr-helm-v4.1.4.json');

  it("leads a release too large for storage with the limit and what counts towards it, keeping helm's words", () => {
    const text = summarizeStderr(samples.releaseTooLarge!);
    const summary = explainFailure(classifyHelmError(samples.releaseTooLarge!, 1), text);
    expect(summary).toBe(
      "release too large for helm's storage: helm keeps each revision (chart, values and rendered manifest, gzipped) in one Secret, " +
        'and Kubernetes limits a Secret to 1 MiB; make the chart or its values smaller ' +
        '(helm: create: failed to create: Secret "sh.helm.release.v1.over.v1" is invalid: data: Too long: may not be more than 1048576 bytes)',
    );
    expect(explainFailure('ReleaseTooLarge', summarizeStderr(samples.upgradeTooLarge!))).toContain(
      '"sh.helm.release.v1.near.v2" is invalid',
    );
  });

  it("leaves other failures in helm's words", () => {
    expect(explainFailure('KubernetesAPIError', 'create: failed to create: connection refused')).toBe(
      'create: failed to create: connection refused',
    );
    expect(explainFailure('ReleaseTooLarge', '')).toMatch(
      /^release too large for helm's storage: .*1 MiB; make the chart or its values smaller$/,
    );
  });

  it('tells a storage object refused for its size from other refused objects', () => {
    const other =
      'Error: INSTALLATION FAILED: failed to create resource: ConfigMap "web" is invalid: data: Too long: may not be more than 1048576 bytes';
    expect(classifyHelmError(other, 1)).toBe('KubernetesAPIError');
  });
});

describe('HelmError', () => {
  it('carries reason, verb and flags, and no cause', () => {
    const err = new HelmError({ reason: 'Timeout', verb: 'upgrade', summary: 'timed out', timedOut: true, exitCode: 1 });
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('HelmError');
    expect(err.message).toBe('helm upgrade failed (Timeout): timed out');
    expect([err.reason, err.verb, err.exitCode, err.timedOut, err.canceled]).toEqual(['Timeout', 'upgrade', 1, true, false]);
    expect(err.cause).toBeUndefined();
    expect(isHelmError(err)).toBe(true);
    expect(isHelmError(err, 'Timeout')).toBe(true);
    expect(isHelmError(err, 'Canceled')).toBe(false);
    expect(isHelmError(new Error('x'))).toBe(false);
  });
});

describe('the cause of a failed helm 4 uninstall', () => {
  it('comes from the debug log, since the Error line omits it', () => {
    const stderr = [
      'level=DEBUG msg="uninstall: deleting release" name=web',
      'level=DEBUG msg="uninstall: Failed to delete release" error="[services \\"web-svc\\" is forbidden: User \\"system:serviceaccount:t:deployer\\" cannot delete resource \\"services\\"]"',
      'Error: failed to delete release: web',
    ].join('\n');
    expect(summarizeStderr(stderr)).toBe(
      'failed to delete release: web: [services "web-svc" is forbidden: User "system:serviceaccount:t:deployer" cannot delete resource "services"]',
    );
  });
});
