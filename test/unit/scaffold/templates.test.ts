import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { applyPlan, insertAtMarker, type CreateOp } from '../../../src/machinery/index.js';
import { initPlan } from '../../../src/scaffold/init.js';
import { apiNames } from '../../../src/scaffold/names.js';
import { watchEntry } from '../../../src/scaffold/templates/api.js';
import { configFiles } from '../../../src/scaffold/templates/config.js';
import { KIND_ROLES_MARKER, kindRole, kindRoleFileName, kindRolesKustomization } from '../../../src/scaffold/templates/kind-roles.js';
import { crdKustomization, managerRole, samplesKustomization, watchesFile } from '../../../src/scaffold/templates/project.js';
import { SECURE_MONITOR_ENDPOINT } from '../../support/secure-scrape.js';

const repo = path.resolve(import.meta.dirname, '../../..');
const runtime = { runtimePackage: 'helm-operator-ts', runtimeVersion: '0.1.0', runtimeDependency: '0.1.0', nodeVersion: '24.21.0' };
const vendored = { ...runtime, runtimeDependency: 'file:vendor/helm-operator-ts-0.1.0.tgz' };

const nginx = apiNames({ group: '', version: 'v1alpha1', kind: 'Nginx' }, 'example.com');

describe("init's config/ templates", () => {
  it("are this repository's own config/ files for the project name helm-operator", () => {
    for (const [file, body] of Object.entries(configFiles({ projectName: 'helm-operator' }))) {
      // This repository's config/rbac lists its Nginx kind's roles where create api lists a kind's.
      const ours =
        file === 'config/rbac/kustomization.yaml' ? insertAtMarker(body, file, KIND_ROLES_MARKER, kindRolesKustomization(nginx)) : body;
      expect(ours, file).toBe(readFileSync(path.join(repo, file), 'utf8'));
    }
  });

  it("hold this repository's Nginx editor and viewer roles as create api writes them", () => {
    for (const role of ['editor', 'viewer'] as const) {
      const file = `config/rbac/${kindRoleFileName(nginx, role)}`;
      expect(readFileSync(path.join(repo, file), 'utf8'), file).toBe(kindRole(nginx, 'helm-operator', role));
    }
  });

  it("render this repository's kustomization and role once create api inserted the nginx entries", () => {
    const crdK = insertAtMarker(crdKustomization(), 'k', 'crdkustomizeresource', '- bases/example.com_nginxes.yaml\n');
    expect(parse(crdK)).toEqual(parse(readFileSync(path.join(repo, 'config/crd/kustomization.yaml'), 'utf8')));
    const samplesK = insertAtMarker(samplesKustomization(), 's', 'manifestskustomizesamples', '- example.com_v1alpha1_nginx.yaml\n');
    expect(parse(samplesK)).toEqual(parse(readFileSync(path.join(repo, 'config/samples/kustomization.yaml'), 'utf8')));
    // This repository's RBAC grants every kind the chart renders with any values, as --rbac=all-values does.
    const allKinds = [
      'ConfigMap',
      'Deployment.apps',
      'HorizontalPodAutoscaler.autoscaling',
      'Ingress.networking.k8s.io',
      'Service',
      'ServiceAccount',
    ];
    const entry = watchEntry(apiNames({ group: '', version: 'v1alpha1', kind: 'Nginx' }, 'example.com'), 'nginx', {
      kinds: allKinds,
      optional: [],
    });
    const watches = insertAtMarker(watchesFile(), 'w', 'watch', entry);
    expect(watches).toBe(readFileSync(path.join(repo, 'watches.yaml'), 'utf8'));
    const role = parse(managerRole({ projectName: 'helm-operator' })) as { rules: unknown[] };
    const repoRole = parse(readFileSync(path.join(repo, 'config/rbac/role.yaml'), 'utf8')) as { rules: unknown[] };
    for (const rule of role.rules) expect(repoRole.rules).toContainEqual(rule);
  });

  it("serve metrics with kubebuilder v4's defaults: HTTPS on :8443 behind TokenReview/SubjectAccessReview, a ServiceMonitor with the token", () => {
    const files = configFiles({ projectName: 'memcached-operator' });
    const doc = (f: string): Record<string, unknown> => parse(files[f] ?? '') as Record<string, unknown>;
    expect(doc('config/default/metrics_service.yaml')).toMatchObject({
      spec: { ports: [{ name: 'https', port: 8443, protocol: 'TCP', targetPort: 8443 }] },
    });
    const deployment = parseAllDocuments(files['config/manager/manager.yaml'] ?? '')
      .map(
        (d) =>
          d.toJS() as {
            kind: string;
            spec?: { template: { spec: { containers: { args: string[]; ports: { name: string; containerPort: number }[] }[] } } };
          },
      )
      .find((d) => d.kind === 'Deployment');
    const manager = deployment?.spec?.template.spec.containers[0];
    expect(manager?.args).toEqual(expect.arrayContaining(['--metrics-bind-address=:8443', '--metrics-secure', '--metrics-require-rbac']));
    expect(manager?.args.some((a) => a.startsWith('--enable-http2'))).toBe(false);
    expect(manager?.ports).toContainEqual({ name: 'metrics', containerPort: 8443, protocol: 'TCP' });
    expect(doc('config/prometheus/monitor.yaml')).toMatchObject({ spec: { endpoints: [SECURE_MONITOR_ENDPOINT] } });
    expect(doc('config/rbac/metrics_auth_role.yaml')).toMatchObject({
      kind: 'ClusterRole',
      metadata: { name: 'metrics-auth-role' },
      rules: [
        { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
        { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
      ],
    });
    expect(doc('config/rbac/metrics_auth_role_binding.yaml')).toMatchObject({
      kind: 'ClusterRoleBinding',
      roleRef: { kind: 'ClusterRole', name: 'metrics-auth-role' },
      subjects: [{ kind: 'ServiceAccount', name: 'controller-manager', namespace: 'system' }],
    });
    expect(doc('config/rbac/metrics_reader_role.yaml')).toMatchObject({
      kind: 'ClusterRole',
      metadata: { name: 'metrics-reader' },
      rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
    });
    expect(parse(files['config/rbac/kustomization.yaml'] ?? '')).toMatchObject({
      resources: expect.arrayContaining([
        'metrics_auth_role.yaml',
        'metrics_auth_role_binding.yaml',
        'metrics_reader_role.yaml',
      ]) as unknown,
    });
  });

  it('names everything after the project', () => {
    const files = configFiles({ projectName: 'memcached-operator' });
    expect(parse(files['config/default/kustomization.yaml']!)).toMatchObject({
      namespace: 'memcached-operator-system',
      namePrefix: 'memcached-operator-',
    });
    expect(files['config/manager/manager.yaml']).toContain('--leader-election-id=memcached-operator');
    expect(Object.values(files).join('\n')).not.toMatch(/helm-operator-system|name: helm-operator\b/);
  });

  it('leaves --max-concurrent-reconciles off the manager, so the deployed operator tunes itself within its CPU limit (ADR 0059)', () => {
    const docs = parseAllDocuments(configFiles({ projectName: 'memcached-operator' })['config/manager/manager.yaml']!).map(
      (d) => d.toJS() as { kind?: string },
    );
    type Deployment = {
      spec: { template: { spec: { containers: { name: string; args?: string[]; resources?: { limits?: { cpu?: string } } }[] } } };
    };
    const deployment = docs.find((d) => d.kind === 'Deployment') as Deployment | undefined;
    const manager = deployment?.spec.template.spec.containers.find((c) => c.name === 'manager');
    expect(manager?.args).toBeDefined();
    expect(manager?.args?.filter((a) => a.startsWith('--max-concurrent-reconciles'))).toEqual([]);
    // The limit the tuner starts from and stays within.
    expect(manager?.resources?.limits?.cpu).toBe('1');
  });
});

describe('initPlan', () => {
  const plan = initPlan({ ...runtime, projectName: 'demo', domain: 'example.com' });
  const body = (p: string): string => String((plan.find((op) => op.path === p) as CreateOp).body);

  it('writes the project layout', () => {
    const paths = plan.map((op) => op.path);
    for (const p of [
      'PROJECT',
      'package.json',
      'watches.yaml',
      'Makefile',
      'Dockerfile',
      'README.md',
      '.gitignore',
      'config/default/kustomization.yaml',
      'config/rbac/role.yaml',
      'config/crd/kustomization.yaml',
    ]) {
      expect(paths).toContain(p);
    }
  });

  it("writes operator-sdk's PROJECT fields with this runtime's layout", () => {
    expect(parse(body('PROJECT'))).toEqual({
      domain: 'example.com',
      layout: ['helm-operator-ts.dev/v1'],
      projectName: 'demo',
      resources: null,
      version: '3',
    });
  });

  it('declares the runtime an exact dependency in package.json, installed by npm ci from the lockfile', () => {
    expect(JSON.parse(body('package.json'))).toEqual({
      name: 'demo',
      version: '0.0.1',
      private: true,
      description: expect.any(String) as string,
      dependencies: { 'helm-operator-ts': '0.1.0' },
    });
    // One install per change of package.json / package-lock.json, never one per target.
    expect(body('Makefile')).toContain('RUNTIME := node_modules/.installed\n');
    expect(body('Makefile')).toMatch(/^\$\(RUNTIME\): package\.json package-lock\.json\n\tnpm ci .*\n\t@touch \$@$/m);
    // npm reports on stderr: stdout of `make -s cluster-up` is the export line that `eval` runs.
    expect(
      body('Makefile')
        .match(/^\tnpm (ci|install) .*$/gm)
        ?.every((l) => l.endsWith(' >&2')),
    ).toBe(true);
    expect(body('Makefile')).not.toMatch(/npm install (?!--package-lock-only)/);
    expect(body('Makefile')).toContain('OPERATOR_NAMESPACE ?= demo-system');
    expect(body('Dockerfile')).toMatch(/^COPY package\.json package-lock\.json \.\/\nRUN npm ci --omit=dev /m);
    expect(body('Dockerfile')).not.toContain('vendor');
    expect(body('Dockerfile')).toContain('FROM node:24.21.0-bookworm-slim');
    expect(body('Dockerfile')).toMatch(/^COPY watches.yaml .*\nCOPY helm-charts\/ /m);
  });

  it('with a vendored runtime, package.json and the Dockerfile install it from vendor/', () => {
    const v = initPlan({ ...vendored, projectName: 'demo', domain: 'example.com' });
    const vbody = (p: string): string => String((v.find((op) => op.path === p) as CreateOp).body);
    expect((JSON.parse(vbody('package.json')) as { dependencies: unknown }).dependencies).toEqual({
      'helm-operator-ts': 'file:vendor/helm-operator-ts-0.1.0.tgz',
    });
    expect(vbody('Dockerfile')).toMatch(/^COPY package\.json package-lock\.json \.\/\nCOPY vendor\/ \.\/vendor\/\nRUN npm ci --omit=dev /m);
    expect(vbody('README.md')).toContain('vendor/helm-operator-ts-0.1.0.tgz');
  });

  it("builds images through the runtime package's image.sh (podman set up, stand-in bases), podman when docker has no engine", () => {
    expect(body('Makefile')).toMatch(
      /^docker-build: \$\(RUNTIME\) .*\n\tCONTAINER_TOOL=\$\(CONTAINER_TOOL\) bash \$\(HACK\)\/image\.sh build \$\(IMG\)$/m,
    );
    expect(body('Makefile')).toContain('CONTAINER_TOOL ?= $(if $(shell docker info >/dev/null 2>&1 && echo up),docker,podman)');
    const pkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { files: string[] };
    expect(pkg.files).toContain('hack/image.sh');
  });

  it('has the Makefile targets this repository has', () => {
    const targets = [...body('Makefile').matchAll(/^([a-z-]+):/gm)].map((m) => m[1]);
    for (const t of [
      'help',
      'run',
      'install',
      'uninstall',
      'deploy',
      'undeploy',
      'run-as-deployed',
      'build-installer',
      'docker-build',
      'docker-push',
      'cluster-up',
      'cluster-down',
    ]) {
      expect(targets).toContain(t);
    }
  });

  it('yields valid YAML for every YAML file', () => {
    for (const op of plan) {
      if (op.op === 'create' && op.path.endsWith('.yaml')) {
        for (const doc of parseAllDocuments(String(op.body)) as { errors: unknown[] }[]) expect(doc.errors, op.path).toEqual([]);
      }
    }
  });

  it('refuses a bad domain or project name', () => {
    expect(() => initPlan({ ...runtime, projectName: 'Demo_1', domain: 'example.com' })).toThrow(/project name "Demo_1"/);
    expect(() => initPlan({ ...runtime, projectName: 'demo', domain: 'Example.COM' })).toThrow(/--domain/);
  });

  it('is idempotent on disk', async () => {
    const { mkdtemp, rm } = await import('node:fs/promises');
    const dir = await mkdtemp(path.join((await import('node:os')).tmpdir(), 'init-'));
    try {
      await applyPlan(dir, plan);
      expect((await applyPlan(dir, plan)).every((r) => r.action === 'unchanged')).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
