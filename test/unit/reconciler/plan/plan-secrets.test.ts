import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { leafStringsAt as stringsAt } from '../../../../src/util/value-leaves.js';
import { readSecretPaths, SECRET_PATHS_LABEL, secretPaths, secretPathsLabels } from '../../../../src/reconciler/desired/secret-paths.js';
import { secretValuePaths } from '../../../../src/reconciler/desired/values-from.js';
import { Redactor } from '../../../../src/reconciler/status/redaction.js';
import {
  classifyObject,
  planDigest,
  planSealer,
  SECRET_VALUE,
  sealPlan,
  type PlanBody,
  type PlanRef,
} from '../../../../src/reconciler/plan/upgrade-plan.js';

const KEY = Buffer.alloc(32, 1);
const CM: PlanRef = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'app' };
const SECRET: PlanRef = { apiVersion: 'v1', kind: 'Secret', namespace: 'ns', name: 'creds' };
const b64 = (s: string): string => Buffer.from(s).toString('base64');
const body = (objects: PlanBody['objects']): PlanBody => ({
  release: 'r',
  namespace: 'ns',
  fromRevision: 1,
  chart: { name: 'c', version: '1.0.0' },
  objects,
  hooks: [],
  crds: [],
});

/** The plan of one ConfigMap whose `password` the CR takes from a Secret, which now holds `secret`. */
function planWith(secret: string, key: Uint8Array = KEY): ReturnType<typeof sealPlan> {
  const redactor = new Redactor([secret]);
  const live = { data: { password: 'live-0ld', plain: 'one' } };
  const after = { data: { password: secret, plain: 'two' } };
  const object = classifyObject(
    CM,
    live,
    { kind: 'applied', after, conflicts: [] },
    { redact: (v) => redactor.deep(v), seal: planSealer(key) },
  );
  if (object === undefined) throw new Error('no change');
  return sealPlan(body([object]));
}

describe('the digest of a plan with hidden values', () => {
  it('differs when only a hidden value differs, and is the same for the same value', () => {
    const x = planWith('secret-X-1234');
    const y = planWith('secret-Y-5678');
    // What a reader sees is the same: the value is hidden on both sides.
    const shown = (p: typeof x): unknown => JSON.parse(JSON.stringify(p.objects, (k, v: unknown) => (k === 'sealed' ? undefined : v)));
    expect(shown(x)).toEqual(shown(y));
    expect(x.digest).not.toBe(y.digest);
    expect(planWith('secret-X-1234').digest).toBe(x.digest);
    // The digest is still the plan as kept: a reader recomputes it from the stored plan.
    expect(planDigest(x)).toBe(x.digest);
  });

  it('shows nothing of the hidden value: not the value, not a plain hash a reader could test guesses against', () => {
    const secret = 'hunter2x';
    const plan = planWith(secret);
    const text = JSON.stringify(plan);
    expect(text).toContain(SECRET_VALUE);
    expect(text).not.toContain(secret);
    for (const raw of [secret, JSON.stringify(secret), b64(secret)]) {
      const hex = createHash('sha256').update(raw).digest('hex');
      expect(text).not.toContain(hex.slice(0, 16));
    }
    // The seal is keyed: under another key the same plan seals otherwise.
    expect(planWith(secret, Buffer.alloc(32, 2)).digest).not.toBe(plan.digest);
  });

  it("seals a Secret's data, created or changed, and a created object whose values are partly redacted", () => {
    const seal = planSealer(KEY);
    const change = (pw: string) =>
      classifyObject(
        SECRET,
        { data: { password: b64('0ld-password') } },
        { kind: 'applied', after: { data: { password: b64(pw) } }, conflicts: [] },
        { redact: (v) => v, seal },
      );
    expect(change('new-password-1')).toMatchObject({ fields: [{ path: '.data.password', before: SECRET_VALUE, after: SECRET_VALUE }] });
    expect(sealPlan(body([change('new-password-1')!])).digest).not.toBe(sealPlan(body([change('new-password-2')!])).digest);
    const create = (pw: string) =>
      classifyObject(
        SECRET,
        undefined,
        { kind: 'applied', after: { data: { password: b64(pw) } }, conflicts: [] },
        { redact: (v) => v, seal },
      );
    expect(create('new-password-1')).toMatchObject({ action: 'create', object: SECRET_VALUE });
    expect(sealPlan(body([create('new-password-1')!])).digest).not.toBe(sealPlan(body([create('new-password-2')!])).digest);
    // A dry-run create's server fields (a new uid each time) are not sealed: equal plans stay equal.
    const withUid = (uid: string) =>
      classifyObject(
        SECRET,
        undefined,
        { kind: 'applied', after: { metadata: { name: 'creds', uid }, data: { password: b64('p-1234') } }, conflicts: [] },
        { redact: (v) => v, seal },
      );
    expect(sealPlan(body([withUid('a')!])).digest).toBe(sealPlan(body([withUid('b')!])).digest);
    // What is shown whole needs no seal: the digest covers it as shown.
    const shownWhole = classifyObject(
      CM,
      undefined,
      { kind: 'applied', after: { metadata: { name: 'app', uid: 'u' }, data: { a: 'b' } }, conflicts: [] },
      { redact: (v) => v, seal },
    );
    expect(shownWhole).not.toHaveProperty('sealed');
    // Nor is a created object kept with what the dry run made up: two plans of one creation digest alike.
    const created = (uid: string) =>
      classifyObject(
        CM,
        undefined,
        {
          kind: 'applied',
          after: { metadata: { name: 'app', uid, creationTimestamp: `t-${uid}`, resourceVersion: '1' }, data: { a: 'b' } },
          conflicts: [],
        },
        { redact: (v) => v, seal },
      );
    expect(created('one')).toStrictEqual({ ...CM, action: 'create', object: { metadata: { name: 'app' }, data: { a: 'b' } } });
    expect(sealPlan(body([created('one')!])).digest).toBe(sealPlan(body([created('two')!])).digest);
    const redactor = new Redactor(['s3cret-token']);
    const url = (t: string) =>
      classifyObject(
        CM,
        undefined,
        { kind: 'applied', after: { data: { url: `db://u:${t}@h` } }, conflicts: [] },
        { redact: (v) => redactor.deep(v), seal },
      );
    expect(JSON.stringify(url('s3cret-token'))).not.toContain('s3cret');
    expect(sealPlan(body([url('s3cret-token')!])).digest).not.toBe(sealPlan(body([url('other-token')!])).digest);
  });
});

describe('a value that was secret in the deployed revision', () => {
  const old = new Redactor(['old-secret-value']);
  const deployed = <T>(v: T): T => old.deep(v);
  const none = <T>(v: T): T => v;

  it('is hidden on the before side once the desired state no longer takes it from a Secret; the new plain value is shown', () => {
    const live = { data: { password: 'old-secret-value', url: 'db://u:old-secret-value@h', plain: 'one' } };
    const after = { data: { password: 'now-plain', url: 'db://u:now-plain@h', plain: 'two' } };
    const planned = classifyObject(CM, live, { kind: 'applied', after, conflicts: [] }, { redact: none, deployed, seal: planSealer(KEY) });
    expect(planned).toMatchObject({
      action: 'change',
      fields: [
        { path: '.data.password', before: SECRET_VALUE, after: 'now-plain' },
        { path: '.data.url', before: SECRET_VALUE, after: 'db://u:now-plain@h' },
        { path: '.data.plain', before: 'one', after: 'two' },
      ],
    });
    expect(JSON.stringify(planned)).not.toContain('old-secret');
    // Without the deployed revision's record, the old secret shows (the defect this fixes).
    expect(JSON.stringify(classifyObject(CM, live, { kind: 'applied', after, conflicts: [] }, none))).toContain('old-secret-value');
  });

  it('hides the after side the other way round (a plain value now from a Secret), and both sides of a Secret object', () => {
    const now = new Redactor(['new-secret-value']);
    const planned = classifyObject(
      CM,
      { data: { password: 'was-plain' } },
      { kind: 'applied', after: { data: { password: 'new-secret-value' } }, conflicts: [] },
      { redact: (v) => now.deep(v), deployed },
    );
    expect(JSON.stringify(planned)).not.toContain('new-secret');
    expect(planned).toMatchObject({ fields: [{ path: '.data.password', after: SECRET_VALUE }] });
    const secret = classifyObject(
      SECRET,
      { data: { password: b64('old-secret-value') } },
      { kind: 'applied', after: { data: { password: b64('now-plain') } }, conflicts: [] },
      { redact: none, deployed },
    );
    expect(secret).toMatchObject({ fields: [{ before: SECRET_VALUE, after: SECRET_VALUE }] });
  });

  it('masks the old secret in an API server refusal that quotes it', () => {
    const refused = classifyObject(
      CM,
      { data: {} },
      {
        kind: 'refused',
        message: 'ConfigMap "app" is invalid: data.password: Invalid value: "old-secret-value": field is immutable',
        conflicts: [],
      },
      { redact: none, deployed, seal: planSealer(KEY) },
    );
    expect(JSON.stringify(refused)).not.toContain('old-secret');
    expect(refused).toMatchObject({ action: 'refuse', recreate: true });
    expect(refused && 'sealed' in refused ? refused.sealed : undefined).toMatch(/^hmac-sha256:[0-9a-f]{32}$/);
  });
});

describe("a revision's record of its secret paths", () => {
  it('reads back the paths its labels record, each label valid Kubernetes label syntax', () => {
    const paths = secretPaths(
      secretValuePaths(
        [
          { kind: 'Secret', name: 'db', key: 'password', targetPath: 'auth.password', optional: false },
          { kind: 'Secret', name: 'more', key: 'values.yaml', optional: false },
          { kind: 'ConfigMap', name: 'plain', key: 'values.yaml', optional: false },
        ],
        [{ password: 'x' }, { 'values.yaml': 'db:\n  url: u\n  hosts: [a, b]\n"dotted.key": v\n' }, { 'values.yaml': 'replicas: 2' }],
      ),
      ['tls.key', 'auth.password'],
    );
    expect(paths).toEqual([['auth', 'password'], ['db', 'url'], ['db', 'hosts', 0], ['db', 'hosts', 1], ['dotted.key'], ['tls', 'key']]);
    const labels = secretPathsLabels(paths);
    for (const [k, v] of Object.entries(labels)) {
      expect(k.startsWith(SECRET_PATHS_LABEL)).toBe(true);
      expect(v).toMatch(/^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$/);
    }
    expect(readSecretPaths({ other: 'x', ...labels })).toEqual(paths);
    expect(secretPathsLabels([])).toEqual({});
    expect(readSecretPaths({})).toEqual([]);
  });

  it('records every value when the paths are too many for its labels, or when the labels do not read back', () => {
    const many = Array.from({ length: 400 }, (_, i) => ['key', `k${i}`]);
    expect(readSecretPaths(secretPathsLabels(many))).toEqual([[]]);
    expect(readSecretPaths({ [SECRET_PATHS_LABEL]: 'zzzz' })).toEqual([[]]);
  });

  it('gives the strings the stored values hold at the paths, the root being all of them', () => {
    const values = { auth: { password: 'pw-1234' }, db: { hosts: ['a', 'b'], port: 5432, tls: true }, plain: 'x' };
    expect(
      stringsAt(values, [
        ['auth', 'password'],
        ['db', 'hosts', 1],
        ['missing', 'path'],
      ]),
    ).toEqual(['pw-1234', 'b']);
    expect(stringsAt(values, [[]])).toEqual(['pw-1234', 'a', 'b', '5432', 'x']);
  });
});
