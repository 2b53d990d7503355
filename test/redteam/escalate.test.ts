/**
 * Issue 32 item 2 and variants: a tenant who may only create CRs writes, through a chart that
 * renders `extraDeploy` with `tpl` (as bitnami's do), a ClusterRoleBinding of itself to
 * cluster-admin, in each of the ways that beat a check made on a second render or with a parser
 * other than helm's; and objects in another namespace or RBAC in its own. Each test asserts on the
 * cluster: the binding absent and the tenant still unable to read a Secret. Also run against the
 * watch entry `create api` writes (its `allowKinds`), which stops what needs a kind the chart does
 * not render.
 */
import { randomBytes } from 'node:crypto';
import { ApiextensionsV1Api, CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { exists } from '../support/kube.js';
import { againstEachConfiguration, attack, clusterRoleBindingCreated, CONFIGURATIONS, discard, SCAFFOLDED } from './support/target.js';
import { TENANT_USER } from './support/tenancy.js';

const bindingName = (id: string): string => `redteam-${id}-${randomBytes(3).toString('hex')}`;

/** The ClusterRoleBinding every escalation tries to create, as YAML lines indented by `indent`. */
function crb(name: string, indent = ''): string {
  return [
    'apiVersion: rbac.authorization.k8s.io/v1',
    'kind: ClusterRoleBinding',
    `metadata: {name: ${name}}`,
    'roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}',
    `subjects: [{kind: User, name: ${TENANT_USER}, apiGroup: rbac.authorization.k8s.io}]`,
  ]
    .map((l) => indent + l)
    .join('\n');
}

const decoy = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-decoy}\ndata: {x: decoy}';

againstEachConfiguration(
  'escalation',
  (target, config) => {
    const a = (): string => target.tenancy.a;

    /**
     * Creates CR `name` as the tenant with `extraDeploy` (or patches a deployed one into it),
     * waits for the operator to finish, and expects no binding `binding` and no Secret readable by the tenant.
     */
    const expectNoEscalation = async (name: string, binding: string): Promise<void> => {
      await target.settle(name);
      const readsSecrets = await target.tenancy.canReadSecret();
      const created = await clusterRoleBindingCreated(target, binding, { crs: target.adminCrs(), name });
      expect(created, `ClusterRoleBinding ${binding} to cluster-admin for ${TENANT_USER}`).toBe(false);
      expect(readsSecrets, `${TENANT_USER} reads Secret internal`).toBe(false);
    };

    attack(
      target,
      { id: '2a', title: 'a ClusterRoleBinding to cluster-admin that only the real install renders (lookup)', kind: 'escalate' },
      async () => {
        const binding = bindingName('2a');
        // The Secret exists for the install (helm reads it through the API) and not for an offline render.
        const attackYaml = `{{- if lookup "v1" "Secret" .Release.Namespace "shared" }}\n${crb(binding)}\n{{- else }}\n${decoy}\n{{- end }}`;
        await target.crs().create(a(), 'by-lookup', { extraDeploy: [attackYaml] });
        await expectNoEscalation('by-lookup', binding);
      },
    );

    attack(
      target,
      { id: '2b', title: 'a ClusterRoleBinding to cluster-admin that only an upgrade renders (.Release.IsUpgrade)', kind: 'escalate' },
      async () => {
        const binding = bindingName('2b');
        await target.crs().create(a(), 'sleeper', { greeting: 'v1' });
        const { outcome } = await target.settle('sleeper');
        expect(outcome).toMatch(/^Deployed\//);
        const attackYaml = `{{- if .Release.IsUpgrade }}\n${crb(binding)}\n{{- else }}\n${decoy}\n{{- end }}`;
        await target.crs().patch(a(), 'sleeper', { spec: { greeting: 'v2', extraDeploy: [attackYaml] } });
        await expectNoEscalation('sleeper', binding);
      },
    );

    attack(
      target,
      { id: '2c', title: 'a ClusterRoleBinding inside the items: of a kind not ending in List', kind: 'escalate' },
      async () => {
        const binding = bindingName('2c');
        // A ConfigMap by its kind, a list to helm's decoder because it has items: helm creates the items.
        const attackYaml = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: carrier}\nitems:\n-\n${crb(binding, '  ')}`;
        await target.crs().create(a(), 'listed', { extraDeploy: [attackYaml] });
        await expectNoEscalation('listed', binding);
      },
    );

    attack(
      target,
      {
        id: '2d',
        title: 'a ClusterRoleBinding in a document with 120 YAML aliases (a reader with a 100-alias limit drops it, helm reads it)',
        kind: 'escalate',
      },
      async () => {
        const binding = bindingName('2d');
        const aliases = Array.from({ length: 120 }, (_, i) => `    a${i}: *v`).join('\n');
        const attackYaml = crb(binding).replace(
          `metadata: {name: ${binding}}`,
          `metadata:\n  name: ${binding}\n  annotations:\n    anchor: &v "x"\n${aliases}`,
        );
        await target.crs().create(a(), 'aliased', { extraDeploy: [attackYaml] });
        await expectNoEscalation('aliased', binding);
      },
    );

    attack(
      target,
      {
        id: '2e',
        title: "a CustomResourceDefinition from the chart's crds/ (cluster-scoped, never templated)",
        kind: 'escalate',
        chartKindsOnly: true,
      },
      async () => {
        const crd = 'gadgets.tenant.example.com';
        const ext = target.tenancy.admin.makeApiClient(ApiextensionsV1Api);
        const gadgets = target.crs(config.gadgets);
        await gadgets.create(a(), 'gadgets', {});
        await target.settle('gadgets', config.gadgets);
        const created = await exists(() => ext.readCustomResourceDefinition({ name: crd }));
        if (created) {
          await discard(target.adminCrs(config.gadgets), a(), 'gadgets');
          await ext.deleteCustomResourceDefinition({ name: crd }).catch(() => undefined);
        }
        expect(created, `CRD ${crd} created`).toBe(false);
      },
    );

    attack(
      target,
      { id: 'v5', title: "a ConfigMap planted in another namespace (the victim's)", kind: 'escalate', chartKindsOnly: true },
      async () => {
        const plant = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: planted, namespace: ${target.tenancy.victim}}\ndata: {x: planted}`;
        await target.crs().create(a(), 'planter', { extraDeploy: [plant] });
        await target.settle('planter');
        const core = target.tenancy.admin.makeApiClient(CoreV1Api);
        const planted = await exists(() => core.readNamespacedConfigMap({ namespace: target.tenancy.victim, name: 'planted' }));
        expect(planted, `ConfigMap planted in ${target.tenancy.victim}`).toBe(false);
      },
    );

    attack(
      target,
      { id: 'v6', title: 'a RoleBinding of the tenant to admin in its own namespace (inside the confinement)', kind: 'escalate' },
      async () => {
        const rb = `apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: self-admin}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}\nsubjects: [{kind: User, name: ${TENANT_USER}, apiGroup: rbac.authorization.k8s.io}]`;
        await target.crs().create(a(), 'self-admin', { extraDeploy: [rb] });
        await target.settle('self-admin');
        const rbac = target.tenancy.admin.makeApiClient(RbacAuthorizationV1Api);
        const bound = await exists(() => rbac.readNamespacedRoleBinding({ namespace: a(), name: 'self-admin' }));
        if (bound) {
          await discard(target.adminCrs(), a(), 'self-admin');
          await rbac.deleteNamespacedRoleBinding({ namespace: a(), name: 'self-admin' }).catch(() => undefined);
        }
        expect(bound, `RoleBinding self-admin of ${TENANT_USER} to admin in ${a()}`).toBe(false);
      },
    );
  },
  [...CONFIGURATIONS, SCAFFOLDED],
);
