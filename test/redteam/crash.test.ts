/**
 * Issue 32 item 1 and the variants of it: what a tenant writes into a CR's annotations and spec
 * (parsed by the operator, shared by every tenant) must neither hang, crash nor exhaust it, and
 * must end in a status saying why, not retried forever. Plus item 8's `reconcile-period: 1ms`.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { VALUES_FROM_ANNOTATION, VALUES_SOURCE_LABEL } from '../../src/reconciler/desired/values-from.js';
import { scrape } from '../integration/production/support.js';
import { total } from '../support/prometheus.js';
import { againstEachConfiguration, attack, releaseConfigMaps } from './support/target.js';

const RECONCILE_PERIOD_ANNOTATION = 'helm.sdk.operatorframework.io/reconcile-period';
const valuesFrom = (yaml: string): Record<string, string> => ({ [VALUES_FROM_ANNOTATION]: yaml });

/** `{a: {a: … {}}}`, `depth` maps deep. */
function nested(depth: number): Record<string, unknown> {
  let v: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

/** A values-from list that YAML expands exponentially: 9 levels of 9 aliases each (a billion laughs). */
function aliasBomb(): string {
  const levels = ['  l0: &l0 [x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i < 9; i++) levels.push(`  l${i}: &l${i} [${Array.from({ length: 9 }, () => `*l${i - 1}`).join(', ')}]`);
  return `- kind: ConfigMap\n  name: kube-root-ca.crt\n  optional: true\n${levels.join('\n')}\n`;
}

againstEachConfiguration('crash and starve', (target, config) => {
  const a = (): string => target.tenancy.a;

  /**
   * A values source the tenant may name: `kube-root-ca.crt` is in every namespace, and the default
   * configuration reads any; under a ServiceAccount only a labelled one is read (ADR 0035), which
   * would refuse the reference before its targetPath is looked at.
   */
  const source =
    config.name === 'default' ? 'kind: ConfigMap, name: kube-root-ca.crt, key: ca.crt' : 'kind: Secret, name: shared, key: token';

  /** Creates the CR as the tenant, waits for the operator to finish with it, expects a refusal that is not retried. */
  const refused = async (name: string, spec: Record<string, unknown>, annotations?: Record<string, string>): Promise<string> => {
    await target.crs().create(a(), name, spec, annotations);
    const { cr, outcome } = await target.settle(name);
    expect(outcome, 'refused (Irreconcilable)').toMatch(/^Irreconcilable\//);
    expect(cr.status?.observedGeneration, 'a refusal for good, not retried with backoff').toBe(cr.metadata.generation);
    return outcome;
  };

  attack(target, { id: '1a', title: 'values-from targetPath "a[" (an unclosed index once looped forever)', kind: 'crash' }, async () => {
    await refused('unclosed', {}, valuesFrom(`- {${source}, targetPath: "a["}`));
  });

  attack(
    target,
    { id: '1b', title: 'values-from targetPath "a[4294967294]" (on kube-root-ca.crt, once allocated the heap away)', kind: 'crash' },
    async () => {
      await refused('huge-index', {}, valuesFrom(`- {${source}, targetPath: "a[4294967294]"}`));
    },
  );

  attack(
    target,
    { id: '1c', title: 'a spec nested 2000 maps deep (once overflowed the stack, retried forever)', kind: 'crash' },
    async () => {
      expect(await refused('deep', { deep: nested(2000) })).toMatch(/^Irreconcilable\/InvalidSpec/);
    },
  );

  attack(
    target,
    { id: 'v1', title: 'a values-from annotation of 10,000 references (YAML aliases of one reference)', kind: 'crash' },
    async () => {
      const refs = `- &r {kind: ConfigMap, name: kube-root-ca.crt, optional: true}\n${'- *r\n'.repeat(9_999)}`;
      await refused('ten-thousand', {}, valuesFrom(refs));
    },
  );

  attack(
    target,
    { id: 'v2', title: 'a values-from annotation that expands to 9^9 strings (a billion laughs)', kind: 'crash' },
    async () => {
      await refused('laughs', {}, valuesFrom(aliasBomb()));
    },
  );

  /**
   * The values-source label is the namespace owner's opt-in, but a tenant's release can write a
   * labelled ConfigMap too: its content is then parsed by the operator like any values file.
   */
  const stockpiled = async (name: string, valuesYaml: string): Promise<void> => {
    const indented = valuesYaml.replaceAll('\n', '\n    ');
    const cm = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  labels: {${VALUES_SOURCE_LABEL}: "true"}\ndata:\n  values.yaml: |\n    ${indented}`;
    await target.crs().create(a(), `${name}-maker`, { extraDeploy: [cm] });
    expect((await target.settle(`${name}-maker`)).outcome).toMatch(/^Deployed\//);
    await target.crs().create(a(), `${name}-user`, {}, valuesFrom(`- {kind: ConfigMap, name: ${name}}`));
    const { outcome } = await target.settle(`${name}-user`);
    expect(outcome, 'the referenced values refused').not.toMatch(/^Deployed\//);
  };

  attack(
    target,
    { id: 'v10', title: "values-from of a labelled ConfigMap the tenant's own release wrote, holding a billion laughs", kind: 'crash' },
    async () => {
      const levels = ['l0: &l0 [x, x, x, x, x, x, x, x, x]'];
      for (let i = 1; i < 9; i++) levels.push(`l${i}: &l${i} [${Array.from({ length: 9 }, () => `*l${i - 1}`).join(', ')}]`);
      await stockpiled('laughs-cm', levels.join('\n'));
    },
  );

  attack(
    target,
    {
      id: 'v11',
      title: "values-from of a labelled ConfigMap the tenant's own release wrote, holding a list nested 5000 deep",
      kind: 'crash',
    },
    async () => {
      await stockpiled('abyss-cm', `deep: ${'['.repeat(5000)}${']'.repeat(5000)}`);
    },
  );

  attack(target, { id: 'v3', title: "a CR name at the API server's limit (253 characters; helm allows 53)", kind: 'crash' }, async () => {
    const outcome = await refused(`n${'x'.repeat(252)}`, {});
    expect(outcome).toMatch(/^Irreconcilable\/InvalidReleaseName/);
  });

  attack(
    target,
    { id: 'v4', title: "values that make helm's release record exceed 1 MiB (1.2 MB of random text in the spec)", kind: 'crash' },
    async () => {
      const name = 'obese';
      // Random base64 does not compress: helm's gzipped record stays above the 1 MiB a Secret may hold.
      await target.crs().create(a(), name, { greeting: 'hi', blob: randomBytes(900_000).toString('base64') });
      const { outcome } = await target.settle(name);
      expect(outcome).not.toMatch(/^Deployed\//);
      // Nothing half-done: the release's objects were not created.
      expect(await releaseConfigMaps(target, name)).toEqual([]);
    },
  );

  attack(
    target,
    { id: 'v12', title: 'a template that fails with a 2 MB message (helm quotes it; status and events must stay bounded)', kind: 'crash' },
    async () => {
      const name = 'shouter';
      await target.crs().create(a(), name, { extraDeploy: ['{{ fail (repeat 2000000 "x") }}'] });
      const { cr, outcome } = await target.settle(name);
      expect(outcome).toMatch(/^ReleaseFailed\//);
      expect(JSON.stringify(cr.status).length, 'status bytes').toBeLessThan(64 * 1024);
      // InstallFailed, or RenderFailed when confinement's pre-flight render met the fail first.
      const failed = await target.adminCrs().waitForEvent(a(), name, (e) => e.type === 'Warning');
      expect((failed.message ?? '').length, `the ${failed.reason ?? ''} event's message`).toBeLessThan(64 * 1024);
    },
  );

  /** A CR with this reconcile-period annotation deploys, and then is not reconciled in a hot loop. */
  const noHotLoop = async (name: string, period: string): Promise<void> => {
    await target.crs().create(a(), name, {}, { [RECONCILE_PERIOD_ANNOTATION]: period });
    const { outcome } = await target.settle(name);
    expect(outcome).toMatch(/^Deployed\//);
    const metrics = await target.process.metricsUrl();
    const reconciles = async (): Promise<number> => total(await scrape(metrics), 'controller_runtime_reconcile_total');
    const before = await reconciles();
    // A rate, so it is observed over a window: in a hot loop thousands of reconciles, at any sane period none or one.
    await new Promise((r) => setTimeout(r, 5_000));
    expect((await reconciles()) - before, 'reconciles in 5 s').toBeLessThan(20);
  };

  attack(target, { id: '8b', title: 'a reconcile-period: 1ms annotation (a hot loop shared by every tenant)', kind: 'starve' }, () =>
    noHotLoop('hot', '1ms'),
  );

  attack(
    target,
    {
      id: '8d',
      title: 'a reconcile-period: 1000h annotation (longer than a Node timer holds, which Node runs after 1 ms: a hot loop)',
      kind: 'starve',
    },
    () => noHotLoop('forever', '1000h'),
  );
});
