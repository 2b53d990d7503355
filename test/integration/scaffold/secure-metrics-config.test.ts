/**
 * A freshly scaffolded project's config/, built by the pinned kubectl's kustomize as `make deploy`
 * builds it: metrics are served as kubebuilder v4 serves them, by default. HTTPS on :8443 behind
 * TokenReview/SubjectAccessReview, the operator bound to the review rules, a metrics-reader
 * ClusterRole for scrapers, the Service on 8443 and a ServiceMonitor that scrapes with its token.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { applyPlan, insertAtMarker } from '../../../src/machinery/index.js';
import { initPlan } from '../../../src/scaffold/init.js';
import { kubectl } from '../../support/deploy.js';
import { SECURE_MONITOR_ENDPOINT } from '../../support/secure-scrape.js';

const PROJECT = 'shop-operator';
const SYSTEM = `${PROJECT}-system`;
const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: shops.example.com
spec:
  group: example.com
  names: { kind: Shop, listKind: ShopList, plural: shops, singular: shop }
  scope: Namespaced
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources: { status: {} }
      schema: { openAPIV3Schema: { type: object, x-kubernetes-preserve-unknown-fields: true } }
`;

interface Obj {
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: Record<string, unknown>;
  rules?: unknown[];
  roleRef?: { kind: string; name: string };
  subjects?: unknown[];
}

interface Container {
  args: string[];
  ports: { name: string; containerPort: number }[];
}

describe("a scaffolded project's config/ serves metrics as kubebuilder v4 does, by default", () => {
  let dir = '';
  let rendered: Obj[] = [];
  let monitor: Obj[] = [];
  const build = async (kustomization: string): Promise<Obj[]> =>
    parseAllDocuments(await kubectl('kustomize', path.join(dir, kustomization)))
      .map((d) => d.toJS() as Obj | null)
      .filter((o): o is Obj => o !== null);
  const find = (kind: string, name: string): Obj => {
    const o = rendered.find((x) => x.kind === kind && x.metadata.name === name);
    if (o === undefined)
      throw new Error(`config/default renders no ${kind} ${name}: ${rendered.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
    return o;
  };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'secure-metrics-config-'));
    const runtime = { runtimePackage: 'helm-operator-ts', runtimeVersion: '0.1.0', runtimeDependency: '0.1.0', nodeVersion: '24.21.0' };
    await applyPlan(dir, initPlan({ ...runtime, projectName: PROJECT, domain: 'example.com' }));
    // What `create api` adds to config/crd (kustomize refuses a kustomization without resources).
    await mkdir(path.join(dir, 'config/crd/bases'), { recursive: true });
    await writeFile(path.join(dir, 'config/crd/bases/example.com_shops.yaml'), CRD);
    const crds = path.join(dir, 'config/crd/kustomization.yaml');
    await writeFile(crds, insertAtMarker(await readFile(crds, 'utf8'), crds, 'crdkustomizeresource', '- bases/example.com_shops.yaml\n'));
    rendered = await build('config/default');
    // What a Prometheus Operator user does: enable ../prometheus in config/default.
    const defaults = path.join(dir, 'config/default/kustomization.yaml');
    const text = await readFile(defaults, 'utf8');
    expect(text).toContain('  # - ../prometheus\n');
    await writeFile(defaults, text.replace('  # - ../prometheus\n', '  - ../prometheus\n'));
    monitor = await build('config/default');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('runs the manager with --metrics-secure --metrics-require-rbac on :8443, HTTP/2 off', () => {
    const deployment = find('Deployment', `${PROJECT}-controller-manager`) as Obj & {
      spec: { template: { spec: { containers: Container[] } } };
    };
    const [manager] = deployment.spec.template.spec.containers;
    expect(manager?.args).toEqual(expect.arrayContaining(['--metrics-bind-address=:8443', '--metrics-secure', '--metrics-require-rbac']));
    expect(manager?.args.filter((a) => a.startsWith('--enable-http2'))).toEqual([]);
    expect(manager?.ports).toContainEqual(expect.objectContaining({ name: 'metrics', containerPort: 8443 }));
  });

  it('binds the operator to the TokenReview/SubjectAccessReview rules and ships metrics-reader unbound', () => {
    expect(find('ClusterRole', `${PROJECT}-metrics-auth-role`).rules).toEqual([
      { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
      { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
    ]);
    const binding = find('ClusterRoleBinding', `${PROJECT}-metrics-auth-rolebinding`);
    expect(binding.roleRef).toMatchObject({ kind: 'ClusterRole', name: `${PROJECT}-metrics-auth-role` });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: `${PROJECT}-controller-manager`, namespace: SYSTEM }]);
    expect(find('ClusterRole', `${PROJECT}-metrics-reader`).rules).toEqual([{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    const readerBindings = rendered.filter((o) => o.roleRef?.name === `${PROJECT}-metrics-reader`);
    expect(readerBindings).toEqual([]);
  });

  it('exposes the metrics Service on 8443 and a ServiceMonitor scraping it over HTTPS with its token', () => {
    expect(find('Service', `${PROJECT}-controller-manager-metrics-service`)).toMatchObject({
      metadata: { namespace: SYSTEM },
      spec: { ports: [{ name: 'https', port: 8443, protocol: 'TCP', targetPort: 8443 }] },
    });
    const monitors = monitor.filter((o) => o.kind === 'ServiceMonitor');
    expect(monitors.map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
      `${SYSTEM}/${PROJECT}-controller-manager-metrics-monitor`,
    ]);
    expect(monitors[0]?.spec).toMatchObject({ endpoints: [SECURE_MONITOR_ENDPOINT] });
  });
});
