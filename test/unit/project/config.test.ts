/**
 * Static checks of the kustomize tree in config/ and of the deployment targets in the Makefile:
 * what `make deploy` applies must keep to least privilege and the restricted Pod Security
 * Standard. test/e2e/deploy.test.ts checks the same tree against a real API server.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const read = (p: string): string => readFileSync(path.join(ROOT, p), 'utf8');

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  nonResourceURLs?: string[];
  resourceNames?: string[];
}

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  rules?: Rule[];
  spec?: Record<string, unknown>;
}

function yamlFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir)).flatMap((e) => {
    const rel = path.join(dir, e);
    if (statSync(path.join(ROOT, rel)).isDirectory()) return yamlFiles(rel);
    return /\.ya?ml$/.test(e) ? [rel] : [];
  });
}

const objectsIn = (file: string): Obj[] =>
  parseAllDocuments(read(file))
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null && typeof o === 'object' && 'kind' in o);

const manifests = yamlFiles('config').filter((f) => path.basename(f) !== 'kustomization.yaml');
const objects = manifests.flatMap(objectsIn);
const find = (kind: string, name: string): Obj => {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (o === undefined) throw new Error(`no ${kind} ${name} in config/`);
  return o;
};

const ALL_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];

/** Verbs the rules grant on `group`/`resource`. */
function granted(rules: readonly Rule[], group: string, resource: string): string[] {
  return [...new Set(rules.filter((r) => r.apiGroups?.includes(group) && r.resources?.includes(resource)).flatMap((r) => r.verbs))].sort();
}

describe('config/ kustomizations', () => {
  const kustomizations = yamlFiles('config').filter((f) => path.basename(f) === 'kustomization.yaml');

  it('exist for every directory the scaffold has', () => {
    for (const d of ['crd', 'rbac', 'manager', 'default', 'samples', 'prometheus', 'manifests']) {
      expect(kustomizations, d).toContain(path.join('config', d, 'kustomization.yaml'));
    }
  });

  it('only list resources that exist', () => {
    for (const k of kustomizations) {
      const doc = parse(read(k)) as { resources?: string[] };
      for (const r of doc.resources ?? []) expect(existsSync(path.join(ROOT, path.dirname(k), r)), `${k}: ${r}`).toBe(true);
    }
  });

  it('config/default ties crd, rbac and manager together in helm-operator-system with the helm-operator- prefix', () => {
    const doc = parse(read('config/default/kustomization.yaml')) as { namespace: string; namePrefix: string; resources: string[] };
    expect(doc.namespace).toBe('helm-operator-system');
    expect(doc.namePrefix).toBe('helm-operator-');
    expect(doc.resources).toEqual(['../crd', '../rbac', '../manager', 'metrics_service.yaml']);
  });

  it('keeps the ServiceMonitor out of config/default (it needs the prometheus-operator CRDs)', () => {
    expect(find('ServiceMonitor', 'controller-manager-metrics-monitor').spec).toMatchObject({
      endpoints: [expect.objectContaining({ port: 'https', scheme: 'https', path: '/metrics' })],
    });
  });
});

describe('config/sharding (docs/adr/0085): make deploy DEPLOY_CONFIG=config/sharding', () => {
  const doc = parse(read('config/sharding/kustomization.yaml')) as {
    resources: string[];
    patches: { target: { kind: string; labelSelector: string }; patch: string }[];
  };

  it('is config/default with the Deployment at 3 replicas and --sharding beside its --leader-elect', () => {
    expect(doc.resources).toEqual(['../default']);
    expect(doc.patches).toHaveLength(1);
    const [only] = doc.patches;
    expect(only?.target).toEqual({ kind: 'Deployment', labelSelector: 'control-plane=controller-manager' });
    expect(find('Deployment', 'controller-manager').metadata.labels?.['control-plane']).toBe('controller-manager');
    expect(parse(only?.patch ?? '')).toEqual([
      { op: 'replace', path: '/spec/replicas', value: 3 },
      { op: 'add', path: '/spec/template/spec/containers/0/args/-', value: '--sharding' },
    ]);
  });

  it('needs no RBAC of its own: the leader-election Role lists, gets, creates and updates leases', () => {
    const rules = find('Role', 'leader-election-role').rules ?? [];
    expect(granted(rules, 'coordination.k8s.io', 'leases')).toEqual(expect.arrayContaining(['create', 'get', 'list', 'update']));
  });

  it('is the file scaffolded projects get', () => {
    expect(read('src/scaffold/templates/files/config/sharding/kustomization.yaml.tmpl')).toBe(read('config/sharding/kustomization.yaml'));
  });

  it('is what deploy and undeploy apply when DEPLOY_CONFIG names it', () => {
    const makefile = read('Makefile');
    expect(makefile).toMatch(/^DEPLOY_CONFIG \?= config\/default$/m);
    expect(makefile).toContain('bash hack/deploy.sh apply $(DEPLOY_CONFIG) $(IMG)');
    expect(makefile).toContain('bash hack/deploy.sh delete $(DEPLOY_CONFIG)');
  });
});

describe('config/rbac', () => {
  const roles = objects.filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole');
  const manager = find('ClusterRole', 'manager-role').rules ?? [];

  it('has no wildcard verb, resource, API group, URL or name in any rule', () => {
    expect(roles.length).toBeGreaterThanOrEqual(3);
    for (const role of roles) {
      for (const rule of role.rules ?? []) {
        for (const v of [
          ...(rule.apiGroups ?? []),
          ...(rule.resources ?? []),
          ...rule.verbs,
          ...(rule.nonResourceURLs ?? []),
          ...(rule.resourceNames ?? []),
        ]) {
          expect(v, `${role.kind}/${role.metadata.name}`).not.toContain('*');
        }
      }
    }
  });

  it('grants the operator exactly what it needs on the CRs of every kind in watches.yaml', () => {
    const watches = parse(read('watches.yaml')) as { group: string; version: string; kind: string }[];
    const crds = yamlFiles('config/crd/bases').flatMap(objectsIn) as unknown as {
      spec: { group: string; names: { kind: string; plural: string } };
    }[];
    for (const w of watches) {
      const crd = crds.find((c) => c.spec.group === w.group && c.spec.names.kind === w.kind);
      expect(crd, `CRD of ${w.group}/${w.kind} in config/crd/bases`).toBeDefined();
      const plural = crd?.spec.names.plural ?? '';
      expect(granted(manager, w.group, plural)).toEqual(['get', 'list', 'patch', 'update', 'watch']);
      expect(granted(manager, w.group, `${plural}/status`)).toEqual(['get', 'patch', 'update']);
      expect(granted(manager, w.group, `${plural}/finalizers`)).toEqual(['update']);
    }
  });

  it('aggregates each watched kind into the built-in edit/admin and view, with no write on its status', () => {
    const watches = parse(read('watches.yaml')) as { group: string; kind: string }[];
    const crds = yamlFiles('config/crd/bases').flatMap(objectsIn) as unknown as {
      spec: { group: string; names: { kind: string; plural: string } };
    }[];
    // Only what config/rbac/kustomization.yaml lists is deployed.
    const listed = (parse(read('config/rbac/kustomization.yaml')) as { resources: string[] }).resources
      .flatMap((f) => objectsIn(`config/rbac/${f}`))
      .filter((o) => o.kind === 'ClusterRole');
    for (const w of watches) {
      const plural = crds.find((c) => c.spec.group === w.group && c.spec.names.kind === w.kind)?.spec.names.plural ?? '';
      const on = (label: string, resource: string): string[] =>
        [
          ...new Set(
            listed
              .filter((r) => r.metadata.labels?.[`rbac.authorization.k8s.io/${label}`] === 'true')
              .flatMap((r) => granted(r.rules ?? [], w.group, resource)),
          ),
        ].sort();
      for (const label of ['aggregate-to-edit', 'aggregate-to-admin']) {
        expect(on(label, plural), label).toEqual(['create', 'delete', 'get', 'list', 'patch', 'update', 'watch']);
        expect(on(label, `${plural}/status`), label).toEqual(['get']);
      }
      expect(on('aggregate-to-view', plural)).toEqual(['get', 'list', 'watch']);
      expect(on('aggregate-to-view', `${plural}/status`)).toEqual(['get']);
    }
  });

  it('grants helm release Secrets, Events, and each kind the nginx chart can render', () => {
    expect(granted(manager, '', 'secrets')).toEqual([...ALL_VERBS].sort());
    expect(granted(manager, '', 'events')).toEqual(['create', 'patch']);
    for (const [group, resource] of [
      ['', 'serviceaccounts'],
      ['', 'configmaps'],
      ['', 'services'],
      ['apps', 'deployments'],
      ['networking.k8s.io', 'ingresses'],
      ['autoscaling', 'horizontalpodautoscalers'],
    ] as const) {
      expect(granted(manager, group, resource), `${group}/${resource}`).toEqual([...ALL_VERBS].sort());
    }
  });

  it('binds the manager role cluster-wide and leader election in the operator namespace to the same ServiceAccount', () => {
    const sa = find('ServiceAccount', 'controller-manager');
    const subject = { kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace };
    const crb = find('ClusterRoleBinding', 'manager-rolebinding') as unknown as {
      roleRef: { kind: string; name: string };
      subjects: unknown[];
    };
    expect(crb.roleRef).toMatchObject({ kind: 'ClusterRole', name: 'manager-role' });
    expect(crb.subjects).toEqual([subject]);
    const rb = find('RoleBinding', 'leader-election-rolebinding') as unknown as {
      roleRef: { kind: string; name: string };
      subjects: unknown[];
    };
    expect(rb.roleRef).toMatchObject({ kind: 'Role', name: 'leader-election-role' });
    expect(rb.subjects).toEqual([subject]);
    const le = find('Role', 'leader-election-role').rules ?? [];
    expect(granted(le, 'coordination.k8s.io', 'leases')).toEqual([...ALL_VERBS].sort());
    expect(granted(le, '', 'events')).toEqual(['create', 'patch']);
    expect(find('ClusterRole', 'metrics-reader').rules).toEqual([{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    const auth = find('ClusterRoleBinding', 'metrics-auth-rolebinding') as unknown as {
      roleRef: { kind: string; name: string };
      subjects: unknown[];
    };
    expect(auth.roleRef).toMatchObject({ kind: 'ClusterRole', name: 'metrics-auth-role' });
    expect(auth.subjects).toEqual([subject]);
  });
});

describe('config/manager', () => {
  interface Container {
    image: string;
    args: string[];
    env?: { name: string; value?: string }[];
    securityContext: Record<string, unknown>;
    livenessProbe: { httpGet: { path: string; port: string | number } };
    readinessProbe: { httpGet: { path: string; port: string | number } };
    ports: { name: string; containerPort: number }[];
    resources: { requests: Record<string, string>; limits: Record<string, string> };
    volumeMounts: { name: string; mountPath: string }[];
  }
  interface PodSpec {
    serviceAccountName: string;
    terminationGracePeriodSeconds: number;
    securityContext: Record<string, unknown>;
    containers: Container[];
    volumes: { name: string; emptyDir?: Record<string, unknown> }[];
  }
  const ns = find('Namespace', 'system');
  const deployment = find('Deployment', 'controller-manager') as unknown as { spec: { template: { spec: PodSpec } } };
  const pod = deployment.spec.template.spec;
  const c = pod.containers[0] as Container;

  it('runs one container with the placeholder image that deploy replaces', () => {
    expect(pod.containers).toHaveLength(1);
    expect(c.image).toBe('controller:latest');
    expect(pod.serviceAccountName).toBe('controller-manager');
  });

  it('passes the operator-sdk args: leader election, probes on :8081, metrics on :8443 over HTTPS behind RBAC', () => {
    expect(c.args).toEqual(
      expect.arrayContaining([
        '--leader-elect',
        '--leader-election-id=helm-operator',
        '--health-probe-bind-address=:8081',
        '--metrics-bind-address=:8443',
        '--metrics-secure',
        '--metrics-require-rbac',
      ]),
    );
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'health' });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'health' });
    expect(c.ports).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'health', containerPort: 8081 }),
        expect.objectContaining({ name: 'metrics', containerPort: 8443 }),
      ]),
    );
  });

  it('meets the restricted Pod Security Standard, which its namespace enforces', () => {
    expect(ns.metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(c.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
  });

  it('gives helm a writable /tmp (emptyDir) under the read-only root filesystem', () => {
    const mount = c.volumeMounts.find((m) => m.mountPath === '/tmp');
    expect(mount).toBeDefined();
    expect(pod.volumes.find((v) => v.name === mount?.name)?.emptyDir).toBeDefined();
    expect(c.env).toContainEqual({ name: 'TMPDIR', value: '/tmp' });
  });

  it('sets requests and limits, the memory limit above the request', () => {
    const mib = (q: string): number => {
      const m = /^(\d+)(Mi|Gi)$/.exec(q);
      if (m === null) throw new Error(`unexpected quantity ${q}`);
      return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
    };
    for (const r of ['cpu', 'memory']) {
      expect(c.resources.requests[r], `requests.${r}`).toBeDefined();
      expect(c.resources.limits[r], `limits.${r}`).toBeDefined();
    }
    // Measured peak with 4 workers: ~456 MiB (operator + helm processes); steady ~200 MiB.
    expect(mib(c.resources.limits.memory ?? '')).toBeGreaterThanOrEqual(512);
    expect(mib(c.resources.requests.memory ?? '')).toBeGreaterThanOrEqual(200);
    expect(mib(c.resources.limits.memory ?? '')).toBeGreaterThan(mib(c.resources.requests.memory ?? ''));
  });

  it('waits longer than the 30 s graceful shutdown before killing the pod', () => {
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(40);
  });
});

describe('Makefile deployment targets', () => {
  const makefile = read('Makefile');

  it('has the kubebuilder/operator-sdk targets, each documented for `make help`', () => {
    for (const t of ['install', 'uninstall', 'deploy', 'undeploy', 'docker-build', 'docker-push', 'build-installer']) {
      expect(makefile, t).toMatch(new RegExp(`^${t}:.*## \\S`, 'm'));
      expect(makefile, t).toMatch(new RegExp(`^\\.PHONY: ${t}$`, 'm'));
    }
  });

  it('defaults IMG and CONTAINER_TOOL like the scaffold, and builds with `$(CONTAINER_TOOL) build -t $(IMG) .`', () => {
    expect(makefile).toMatch(/^IMG \?= controller:latest$/m);
    expect(makefile).toMatch(/^CONTAINER_TOOL \?= docker$/m);
    expect(makefile).toMatch(/^\t\$\(CONTAINER_TOOL\) build -t \$\(IMG\) \.$/m);
    // As the scaffold's: podman pushes to a loopback registry over plain HTTP only when told to.
    expect(makefile).toMatch(/^\t\$\(PODMAN_ENV\) \$\(CONTAINER_TOOL\) push \$\(PUSH_FLAGS\) \$\(IMG\)$/m);
    expect(makefile).toMatch(
      /^PUSH_FLAGS \?= \$\(if \$\(and \$\(filter podman,\$\(CONTAINER_TOOL\)\),\$\(filter 127\.0\.0\.1:% localhost:%,\$\(IMG\)\)\),--tls-verify=false\)$/m,
    );
  });
});
