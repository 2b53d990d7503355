import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { GenerateBundleFlags } from '../../../src/bundle/commands.js';
import { buildBundle } from '../../../src/bundle/csv.js';
import { defineGenerateCommand } from '../../../src/cli/bundle.js';
import { ownedEntries } from '../../../src/bundle/descriptors.js';
import { generateBundle } from '../../../src/bundle/generate.js';
import { scorecardKustomize } from '../../../src/bundle/scorecard.js';
import { get, type K8sObject } from '../../../src/bundle/types.js';
import { isPlainObject } from '../../../src/util/plain-object.js';
import { kustomizeManifests } from '../../../src/bundle/kustomize-manifests.js';
import { formatFindings, validateBundle } from '../../../src/bundle/validate.js';
import {
  asBundleFiles,
  brokenBundle,
  brokenCases,
  DEPRECATED_API_MESSAGES,
  deprecatedApiBundle,
  generateFixture,
  kustomizeOutput,
} from '../../support/bundle-fixture.js';

const build = () =>
  buildBundle({ objects: kustomizeOutput(), version: '0.1.0', packageName: 'demo-operator', createdAt: 'T', builderVersion: '0.1.0' });

describe('generate bundle', () => {
  it('moves the Deployment and the ServiceAccount’s bound roles into the CSV', () => {
    const { csv, others, notes } = build();
    expect(csv.metadata.name).toBe('demo-operator.v0.1.0');
    expect(get(csv, 'spec', 'install', 'strategy')).toBe('deployment');
    expect(get(csv, 'spec', 'install', 'spec', 'deployments', '0', 'name')).toBe('demo-controller-manager');
    expect(get(csv, 'spec', 'install', 'spec', 'permissions', '0', 'rules', '0', 'resources')).toEqual(['leases']);
    expect(get(csv, 'spec', 'install', 'spec', 'clusterPermissions', '0', 'serviceAccountName')).toBe('demo-controller-manager');
    expect(others.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'ClusterRole/demo-metrics-reader',
      'Service/demo-metrics-service',
    ]);
    expect(others.every((o) => o.metadata.namespace === undefined)).toBe(true);
    expect(notes.join()).toContain('Namespace demo-system');
  });

  it('sets WATCH_NAMESPACE from olm.targetNamespaces, relatedImages, alm-examples and the builder annotations', () => {
    const { csv } = build();
    expect(get(csv, 'spec', 'install', 'spec', 'deployments', '0', 'spec', 'template', 'spec', 'containers', '0', 'env')).toEqual([
      { name: 'WATCH_NAMESPACE', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['olm.targetNamespaces']" } } },
    ]);
    expect(get(csv, 'spec', 'relatedImages')).toEqual([{ name: 'manager', image: 'registry.example.com/demo-operator:v0.1.0' }]);
    expect(JSON.parse(csv.metadata.annotations!['alm-examples']!)).toEqual([
      { apiVersion: 'example.com/v1alpha1', kind: 'Web', metadata: { name: 'web-sample' }, spec: { replicaCount: 2 } },
    ]);
    expect(csv.metadata.annotations!['operators.operatorframework.io/project_layout']).toBe('helm.sdk.operatorframework.io/v1');
  });

  it('derives descriptors from the CRD schema', () => {
    const [owned] = ownedEntries(kustomizeOutput().find((o) => o.kind === 'CustomResourceDefinition')!);
    expect(owned).toMatchObject({ name: 'webs.example.com', version: 'v1alpha1', kind: 'Web', description: 'Web runs the web chart.' });
    expect(owned!.specDescriptors).toEqual([
      { path: 'image', displayName: 'Image' },
      { path: 'replicaCount', displayName: 'Replica Count', description: 'How many pods' },
    ]);
    expect(owned!.statusDescriptors![0]!['x-descriptors']).toEqual(['urn:alm:descriptor:io.kubernetes.conditions']);
  });

  it('keeps the user’s edits of the base CSV, and is byte-stable apart from createdAt', () => {
    const objects = kustomizeOutput();
    const base = objects[0]!;
    const spec = isPlainObject(base['spec']) ? base['spec'] : {};
    spec['displayName'] = 'My Demo';
    spec['customresourcedefinitions'] = { owned: [{ name: 'webs.example.com', version: 'v1alpha1', displayName: 'Web Site' }] };
    const { csv } = buildBundle({ objects, version: '0.1.0', packageName: 'demo-operator', createdAt: 'T', builderVersion: '0.1.0' });
    expect(get(csv, 'spec', 'displayName')).toBe('My Demo');
    expect(get(csv, 'spec', 'customresourcedefinitions', 'owned', '0', 'displayName')).toBe('Web Site');
    const a = generateFixture('2026-01-01T00:00:00Z').map((o) => String(o.body).replace(/createdAt: .*/, ''));
    const b = generateFixture('2026-02-02T00:00:00Z').map((o) => String(o.body).replace(/createdAt: .*/, ''));
    expect(a).toEqual(b);
  });

  it('refuses bad input with the reason', () => {
    expect(() =>
      buildBundle({ objects: kustomizeOutput().slice(1), version: '0.1.0', packageName: 'p', createdAt: 'T', builderVersion: '0' }),
    ).toThrow(/no ClusterServiceVersion/);
    expect(() =>
      buildBundle({ objects: kustomizeOutput(), version: 'one', packageName: 'p', createdAt: 'T', builderVersion: '0' }),
    ).toThrow(/not a semantic version/);
    expect(() =>
      buildBundle({
        objects: kustomizeOutput(),
        version: '0.1.0',
        packageName: 'p',
        createdAt: 'T',
        builderVersion: '0',
        useImageDigests: true,
      }),
    ).toThrow(/not pinned by digest/);
  });

  it('writes the base CSV and kustomization only when absent', () => {
    const plan = kustomizeManifests('demo-operator');
    expect(plan.map((o) => (o.op === 'create' ? [o.path, o.ifExists] : []))).toEqual([
      ['config/manifests/bases/demo-operator.clusterserviceversion.yaml', 'skip'],
      ['config/manifests/kustomization.yaml', 'skip'],
      ['config/scorecard/bases/config.yaml', 'skip'],
      ['config/scorecard/kustomization.yaml', 'skip'],
      ['config/scorecard/patches/basic.config.yaml', 'skip'],
      ['config/scorecard/patches/olm.config.yaml', 'skip'],
    ]);
    expect((parse((plan[1] as { body: string }).body) as { resources: string[] }).resources).toEqual(
      expect.arrayContaining(['../default', '../samples', '../scorecard']),
    );
    const csv = parse((plan[0] as { body: string }).body) as { spec: { installModes: unknown[] } };
    expect(csv.spec.installModes).toHaveLength(4);
  });
});

describe('scorecard', () => {
  const scorecardOf = (objects: K8sObject[]): unknown => {
    const { plan } = generateBundle({
      objects,
      version: '0.1.0',
      packageName: 'demo-operator',
      createdAt: 'T',
      builderVersion: '0',
      channels: ['alpha'],
    });
    const op = plan.find((o) => o.op === 'create' && o.path === 'bundle/tests/scorecard/config.yaml');
    return parse((op as { body: string }).body);
  };
  const custom: K8sObject = {
    apiVersion: 'scorecard.operatorframework.io/v1alpha3',
    kind: 'Configuration',
    metadata: { name: 'config' },
    stages: [{ parallel: false, tests: [] }],
  };

  it("writes config/scorecard's Configuration to tests/, not to manifests/", () => {
    const { plan } = generateBundle({
      objects: [...kustomizeOutput(), custom],
      version: '0.1.0',
      packageName: 'demo-operator',
      createdAt: 'T',
      builderVersion: '0',
      channels: ['alpha'],
    });
    expect(
      plan.filter((o) => o.op === 'create' && o.path.includes('/manifests/') && String(o.body).includes('kind: Configuration')),
    ).toEqual([]);
    expect(scorecardOf([...kustomizeOutput(), custom])).toEqual(custom);
  });

  it("is operator-sdk's default (basic + olm suites) without one, and the same as config/scorecard renders", () => {
    const def = scorecardOf(kustomizeOutput()) as { stages: { tests: { labels: { suite: string; test: string } }[] }[] };
    expect(def.stages[0]?.tests.map((t) => t.labels.test)).toEqual([
      'basic-check-spec-test',
      'olm-bundle-validation-test',
      'olm-crds-have-validation-test',
      'olm-crds-have-resources-test',
      'olm-spec-descriptors-test',
      'olm-status-descriptors-test',
    ]);
    // config/scorecard: the base plus each patch's tests, in order, is that default.
    const files = new Map(scorecardKustomize().flatMap((op) => (op.op === 'create' ? [[op.path, parse(String(op.body)) as unknown]] : [])));
    const base = structuredClone(files.get('config/scorecard/bases/config.yaml')) as typeof def;
    for (const suite of ['basic', 'olm']) {
      for (const p of files.get(`config/scorecard/patches/${suite}.config.yaml`) as { value: (typeof def)['stages'][0]['tests'][0] }[])
        base.stages[0]?.tests.push(p.value);
    }
    expect(base).toEqual(def);
  });

  it('refuses two Configurations', () => {
    expect(() => scorecardOf([...kustomizeOutput(), custom, { ...custom, metadata: { name: 'other' } }])).toThrow(
      /2 scorecard Configurations/,
    );
  });
});

describe('bundle validate', () => {
  it('accepts the generated bundle, optional suite included', () => {
    const findings = validateBundle(asBundleFiles(generateFixture()), { selectOptional: 'suite=operatorframework' });
    expect(findings.filter((f) => f.level === 'error')).toEqual([]);
  });

  it.each(brokenCases)('rejects $name', (c) => {
    const findings = validateBundle(brokenBundle(c));
    const errors = findings.filter((f) => f.level === 'error');
    expect(errors.some((e) => e.check === c.ours.check && (c.ours.path === undefined || e.path === c.ours.path))).toBe(true);
  });

  it('reports annotation problems with the file and field', () => {
    const b = asBundleFiles(generateFixture());
    const files = b.files.map((f) =>
      f.path === 'metadata/annotations.yaml' ? { ...f, text: f.text.replace('registry+v1', 'helm+v1') } : f,
    );
    expect(validateBundle({ dirs: b.dirs, files })).toContainEqual(
      expect.objectContaining({
        check: 'format',
        file: 'metadata/annotations.yaml',
        path: 'annotations.operators.operatorframework.io.bundle.mediatype.v1',
      }),
    );
    expect(() => validateBundle(b, { selectOptional: 'suite=nope' })).toThrow(/expected suite=operatorframework/);
  });
});

describe("bundle validate: OLM's deprecated-API warnings (alpha-deprecated-apis, in suite=operatorframework)", () => {
  it('warns about an object and a CSV rule of an API Kubernetes removed, with OLM’s message, when minKubeVersion is older', () => {
    const findings = validateBundle(deprecatedApiBundle('1.24.0'), { selectOptional: 'suite=operatorframework' }).filter(
      (f) => f.check === 'alpha-deprecated-apis',
    );
    expect(findings.map((f) => f.level)).toEqual(['warning', 'warning']);
    expect(findings[0]).toMatchObject({
      file: 'manifests/demo-pdb_policy_v1beta1_poddisruptionbudget.yaml',
      message: DEPRECATED_API_MESSAGES.object,
    });
    expect(findings[1]?.message).toMatch(DEPRECATED_API_MESSAGES.rule);
    expect(formatFindings(findings, 'text')).toMatch(
      /^WARN {2}\[alpha-deprecated-apis\] manifests\/demo-pdb_policy_v1beta1_poddisruptionbudget\.yaml: this bundle is using APIs which were deprecated and removed in v1\.25/m,
    );
  });

  it('makes the removed object an error once minKubeVersion is at or past the removal; the rule stays a warning', () => {
    const findings = validateBundle(deprecatedApiBundle('1.28.0'), { selectOptional: 'name=alpha-deprecated-apis' }).filter(
      (f) => f.check === 'alpha-deprecated-apis',
    );
    expect(findings.map((f) => f.level)).toEqual(['error', 'warning']);
  });

  it('is optional, as in OLM: not run without --select-optional', () => {
    expect(validateBundle(deprecatedApiBundle('1.24.0')).filter((f) => f.check === 'alpha-deprecated-apis')).toEqual([]);
  });
});

describe('generate bundle --sharded-replicas (docs/adr/0100)', () => {
  const csvDeployment = (csv: K8sObject): unknown => get(csv, 'spec', 'install', 'spec', 'deployments', '0', 'spec');
  const argsOf = (csv: K8sObject): unknown => get(csvDeployment(csv), 'template', 'spec', 'containers', '0', 'args');

  /** The fixture as config/default renders it: a leader-electing manager, and a Role with sharding's Lease verbs. */
  function operatorProject(o: { args?: string[]; leaseVerbs?: string[]; replicas?: number } = {}): K8sObject[] {
    const objects = kustomizeOutput();
    const role = objects.find((x) => x.kind === 'Role')!;
    role['rules'] = [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: o.leaseVerbs ?? ['get', 'list', 'create', 'update'] },
    ];
    const d = objects.find((x) => x.kind === 'Deployment')!;
    const spec = d['spec'] as Record<string, unknown>;
    if (o.replicas !== undefined) spec['replicas'] = o.replicas;
    const [manager] = get(d, 'spec', 'template', 'spec', 'containers') as Record<string, unknown>[];
    manager!['args'] = o.args ?? ['--leader-elect', '--leader-election-id=demo'];
    return objects;
  }
  const bundleOf = (objects: K8sObject[], shardedReplicas?: number) =>
    buildBundle({
      objects,
      version: '0.1.0',
      packageName: 'demo-operator',
      createdAt: 'T',
      builderVersion: '0.1.0',
      ...(shardedReplicas === undefined ? {} : { shardedReplicas }),
    });

  it('runs the operator Deployment as N replicas with --sharding, and leaves the input as it was', () => {
    const objects = operatorProject();
    const before = structuredClone(objects);
    const { csv, notes } = bundleOf(objects, 3);
    expect(get(csvDeployment(csv), 'replicas')).toBe(3);
    // Sharding spreads namespaces: the install modes that watch one say so.
    expect(notes.join('\n')).toMatch(/OwnNamespace or SingleNamespace, one replica owns the one namespace/);
    expect(argsOf(csv)).toEqual(['--leader-elect', '--leader-election-id=demo', '--sharding']);
    // The Lease verbs went into the CSV's permissions, which OLM grants in the install namespace.
    expect(get(csv, 'spec', 'install', 'spec', 'permissions', '0', 'rules', '0', 'verbs')).toEqual(['get', 'list', 'create', 'update']);
    expect(objects).toEqual(before);
  });

  it('without the flag keeps one replica and no --sharding', () => {
    const { csv, notes } = bundleOf(operatorProject());
    expect(get(csvDeployment(csv), 'replicas')).toBe(1);
    expect(notes.join('\n')).not.toMatch(/replicas share/);
    expect(argsOf(csv)).toEqual(['--leader-elect', '--leader-election-id=demo']);
  });

  it('takes a Deployment already sharded (config/manifests built from config/sharding) as it is, and does not add --sharding twice', () => {
    const sharded = () => operatorProject({ args: ['--leader-elect', '--leader-election-id=demo', '--sharding'], replicas: 3 });
    expect(get(csvDeployment(bundleOf(sharded()).csv), 'replicas')).toBe(3);
    const { csv } = bundleOf(sharded(), 5);
    expect(get(csvDeployment(csv), 'replicas')).toBe(5);
    expect(argsOf(csv)).toEqual(['--leader-elect', '--leader-election-id=demo', '--sharding']);
  });

  it('refuses a sharded bundle whose ServiceAccount may not list, create and update Leases, naming the verbs and the file', () => {
    expect(() => bundleOf(operatorProject({ leaseVerbs: ['get', 'create', 'update'] }), 3)).toThrow(
      /ServiceAccount demo-controller-manager may not list coordination\.k8s\.io leases.*config\/rbac\/leader_election_role\.yaml/,
    );
    expect(() => bundleOf(operatorProject({ leaseVerbs: ['get'] }), 2)).toThrow(/may not list, create, update/);
    // The same check on a Deployment that came sharded: OLM would install it, and its replicas would fail on their first Lease write.
    expect(() =>
      bundleOf(
        operatorProject({ args: ['--leader-elect', '--leader-election-id=demo', '--sharding'], leaseVerbs: ['get', 'create', 'update'] }),
      ),
    ).toThrow(/may not list/);
    // '*' grants them; a rule limited to named Leases does not (the Lease names are made at run time).
    expect(() => bundleOf(operatorProject({ leaseVerbs: ['*'] }), 3)).not.toThrow();
    const named = operatorProject();
    (named.find((x) => x.kind === 'Role')!['rules'] as Record<string, unknown>[])[0]!['resourceNames'] = ['demo'];
    expect(() => bundleOf(named, 3)).toThrow(/may not list, create, update/);
  });

  it('refuses --sharding without --leader-elect, a Deployment that elects no leader, and a count below 1', () => {
    expect(() => bundleOf(operatorProject({ args: ['--sharding'] }))).toThrow(/container manager: --sharding without --leader-elect/);
    expect(() => bundleOf(operatorProject({ args: ['--leader-elect=false', '--sharding'] }))).toThrow(/without --leader-elect/);
    expect(() => bundleOf(operatorProject({ args: [] }), 3)).toThrow(
      /no container of Deployment demo-controller-manager runs --leader-elect.*--leader-election-id/,
    );
    expect(() => bundleOf(operatorProject(), 0)).toThrow(/--sharded-replicas 0: give a whole number of replicas, at least 1/);
  });

  it('multiplies only the Deployment that elects a leader, not another one the bundle carries', () => {
    const objects = operatorProject();
    const other = structuredClone(objects.find((x) => x.kind === 'Deployment')!);
    other.metadata.name = 'demo-webhook';
    const [c] = get(other, 'spec', 'template', 'spec', 'containers') as Record<string, unknown>[];
    c!['args'] = ['--port=9443'];
    const { csv } = bundleOf([...objects, other], 3);
    const deployments = get(csv, 'spec', 'install', 'spec', 'deployments') as { name: string; spec: { replicas: number } }[];
    expect(deployments.map((d) => [d.name, d.spec.replicas])).toEqual([
      ['demo-controller-manager', 3],
      ['demo-webhook', 1],
    ]);
  });
});

describe('generate bundle --sharded-replicas on the command line', () => {
  /** The flags the command hands to its action, or the parse error. */
  async function parsed(...args: string[]): Promise<GenerateBundleFlags> {
    const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'sharded-flag-')), 'in.yaml');
    await writeFile(file, '');
    let got: GenerateBundleFlags | undefined;
    const cmd = defineGenerateCommand(
      async () => {},
      (f) => {
        got = f;
        return Promise.resolve();
      },
      '0.1.0',
    );
    cmd.exitOverride().configureOutput({ writeErr: () => {} });
    for (const sub of cmd.commands) sub.exitOverride().configureOutput({ writeErr: () => {} });
    await cmd.parseAsync(['bundle', '--version', '0.1.0', '--input-file', file, ...args], { from: 'user' });
    if (got === undefined) throw new Error('the action did not run');
    return got;
  }

  it('passes N to the generator, and nothing without the flag', async () => {
    expect((await parsed('--sharded-replicas', '3')).shardedReplicas).toBe(3);
    expect((await parsed()).shardedReplicas).toBeUndefined();
  });

  it('refuses a count that is not a whole number of at least 1', async () => {
    await expect(parsed('--sharded-replicas', '0')).rejects.toThrow(/--sharded-replicas must be a whole number of at least 1, got "0"/);
    await expect(parsed('--sharded-replicas', 'three')).rejects.toThrow(/--sharded-replicas must be a whole number/);
  });
});
