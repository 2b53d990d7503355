/**
 * Issue 32 item 5: values under the watch's `sensitiveValues` that the API server refuses and quotes
 * back in its error (helm passes the quote on) must appear in no status, event or log line, however
 * long they are (helm's summary once cut a 1500-character token and left 889 characters) and
 * whatever whitespace they hold (helm collapses runs of spaces; the API server escapes a tab).
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { againstEachConfiguration, attack } from './support/target.js';

/** An object whose label value is the sensitive value: not a valid label value, so the API server refuses and quotes it. */
const quoted =
  'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-quoted\n  labels: {leak: {{ .Values.auth.token | quote }}}\ndata: {x: quoted}';

againstEachConfiguration('leaks', (target, config) => {
  const a = (): string => target.tenancy.a;

  /** Installs a CR whose auth.token is `token`; returns every 12 characters of `secretPart` found where the tenant or the log can see them. */
  const leakedFragments = async (name: string, token: string, secretPart: string): Promise<string[]> => {
    await target.crs().create(a(), name, { auth: { token }, extraDeploy: [quoted] });
    const { cr, outcome } = await target.settle(name);
    expect(outcome).toMatch(/^ReleaseFailed\//);
    // Not vacuous: the API server did refuse the value and say so.
    expect(JSON.stringify(cr.status?.conditions)).toContain('Invalid value');
    await target.process.waitForLog(
      `${name}'s failure in the log`,
      (l) => l.msg === 'Reconciler error' && JSON.stringify(l).includes(name),
    );
    const fragments =
      secretPart.length <= 12
        ? [secretPart]
        : Array.from({ length: Math.floor((secretPart.length - 12) / 6) + 1 }, (_, i) => secretPart.slice(i * 6, i * 6 + 12));
    const places = {
      'what the tenant reads (CRs, status, events, ConfigMaps)': await target.tenancy.tenantReadable([config.extras]),
      'operator log': target.process.dump(),
    };
    return Object.entries(places).flatMap(([where, text]) => fragments.filter((f) => text.includes(f)).map((f) => `${where}: ${f}`));
  };

  attack(
    target,
    {
      id: '5a',
      title: "a 1500-character sensitive token quoted back in an error (longer than helm's 1000-character summary)",
      kind: 'leak',
    },
    async () => {
      const token = randomBytes(750).toString('hex');
      expect(await leakedFragments('long-token', token, token)).toEqual([]);
    },
  );

  attack(target, { id: '5b', title: 'a sensitive value with two spaces and a tab quoted back in an error', kind: 'leak' }, async () => {
    const hidden = randomBytes(8).toString('hex');
    expect(await leakedFragments('spaced', `pw  ${hidden}\tend`, hidden)).toEqual([]);
  });
});
