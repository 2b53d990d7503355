import { describe, expect, it } from 'vitest';
import type { DriftIgnoreRule } from '../../../../src/config/drift-ignore-rules.js';
import { driftedPaths } from '../../../../src/reconciler/drift/drift.js';
import {
  annotationRules,
  ignoredFields,
  isWithin,
  rulesFingerprint,
  withLiveFields,
} from '../../../../src/reconciler/drift/drift-ignore.js';

const WEBHOOK = { kind: 'MutatingWebhookConfiguration', name: 'vault-agent-injector-cfg', labels: { 'app.kubernetes.io/name': 'vault' } };
const CA = '/webhooks/0/clientConfig/caBundle';
const config = (caBundle: string | undefined, timeoutSeconds = 10) => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'MutatingWebhookConfiguration',
  metadata: { name: 'vault-agent-injector-cfg' },
  webhooks: [
    {
      name: 'vault.hashicorp.com',
      timeoutSeconds,
      clientConfig: { service: { name: 'vault' }, ...(caBundle === undefined ? {} : { caBundle }) },
    },
  ],
});

describe('ignoredFields', () => {
  it('applies a rule without a target to every object, and a targeted one by kind, name and labels', () => {
    const rules: DriftIgnoreRule[] = [
      { paths: ['/spec/replicas'] },
      { paths: [CA], target: { kind: 'MutatingWebhookConfiguration', name: 'vault-agent-injector-cfg' } },
      { paths: ['/metadata/annotations/a~1b'], target: { labelSelector: { matchLabels: { 'app.kubernetes.io/name': 'vault' } } } },
    ];
    expect(ignoredFields(rules, WEBHOOK)).toEqual([
      ['spec', 'replicas'],
      ['webhooks', '0', 'clientConfig', 'caBundle'],
      ['metadata', 'annotations', 'a/b'],
    ]);
    expect(ignoredFields(rules, { kind: 'Deployment', name: 'vault', labels: {} })).toEqual([['spec', 'replicas']]);
  });

  it('ignores nothing when no rule matches the object, or a rule names a field the object does not have', () => {
    const rules: DriftIgnoreRule[] = [
      { paths: [CA], target: { kind: 'ValidatingWebhookConfiguration' } },
      { paths: [CA], target: { kind: 'MutatingWebhookConfiguration', name: 'other' } },
      { paths: [CA], target: { labelSelector: { matchExpressions: [{ key: 'tier', operator: 'Exists' }] } } },
    ];
    expect(ignoredFields(rules, WEBHOOK)).toEqual([]);
    expect(ignoredFields([], WEBHOOK)).toEqual([]);
    // A path into nothing the chart sets: the desired object is unchanged, drift is as without it.
    const desired = config('');
    const live = config('Q0E=', 30);
    expect(
      withLiveFields(desired, live, [
        ['spec', 'replicas'],
        ['webhooks', '7', 'x'],
        ['webhooks', 'x'],
      ]),
    ).toEqual(desired);
  });
});

describe('withLiveFields', () => {
  it('takes the live value of an ignored field, so it is neither drift nor restored, and leaves the rest', () => {
    const desired = config('');
    const live = config('Q0E=', 30);
    const masked = withLiveFields(desired, live, [['webhooks', '0', 'clientConfig', 'caBundle']]);
    expect(driftedPaths(desired, live)).toEqual(['.webhooks[0].timeoutSeconds', '.webhooks[0].clientConfig.caBundle']);
    expect(driftedPaths(masked, live)).toEqual(['.webhooks[0].timeoutSeconds']);
    expect(desired.webhooks[0]?.clientConfig.caBundle).toBe('');
  });

  it('leaves out an ignored key the live object lacks, and covers everything below an ignored field', () => {
    expect(withLiveFields(config(''), config(undefined), [['webhooks', '0', 'clientConfig', 'caBundle']])).toEqual(config(undefined));
    const masked = withLiveFields(config(''), config('Q0E=', 30), [['webhooks', '0']]);
    expect(driftedPaths(masked, config('Q0E=', 30))).toEqual([]);
    expect(isWithin(['webhooks', 0, 'clientConfig', 'caBundle'], ['webhooks', '0'])).toBe(true);
    expect(isWithin(['webhooks', 1, 'clientConfig'], ['webhooks', '0'])).toBe(false);
  });
});

describe('annotationRules', () => {
  const raw = `[{paths: [${CA}], target: {kind: MutatingWebhookConfiguration}}]`;

  it('reads the CR’s rules when the watch allows them', () => {
    expect(annotationRules(raw, true)).toEqual({ rules: [{ paths: [CA], target: { kind: 'MutatingWebhookConfiguration' } }] });
    expect(annotationRules(undefined, false)).toEqual({ rules: [] });
  });

  it('refuses them, whatever they hold, when the watch does not', () => {
    const refused = annotationRules(raw, false);
    expect(refused.rules).toEqual([]);
    expect(refused.problem).toContain('the watch does not set allowDriftIgnoreAnnotation: true');
  });

  it.each([
    ['[{paths: [spec/replicas]}]', /at 0\.paths\.0: "spec\/replicas" is not a JSON pointer/],
    ['[{paths: [/a]', /is not valid YAML/],
    [`[${Array.from({ length: 9 }, () => '{paths: [/a]}').join(',')}]`, /9 rules, more than the 8 allowed/],
    [`[{paths: [${Array.from({ length: 33 }, (_, i) => `/a${i}`).join(',')}]}]`, /33 paths over all rules, more than the 32 allowed/],
    ['[[[[[[[[[[/a]]]]]]]]]]', /nests more than 8 brackets/],
    [`[{paths: [/${'a'.repeat(5000)}]}]`, /characters long, more than 4096/],
    ['{paths: [/a]}', /expected a list of rules/],
  ])('refuses a malformed annotation (%#) with a message, and obeys none of it', (text, message) => {
    const result = annotationRules(text, true);
    expect(result.rules).toEqual([]);
    expect(result.problem).toMatch(message);
  });
});

describe('rulesFingerprint', () => {
  it('changes with the rules', () => {
    expect(rulesFingerprint([{ paths: [CA] }])).toBe(rulesFingerprint([{ paths: [CA] }]));
    expect(rulesFingerprint([{ paths: [CA] }])).not.toBe(rulesFingerprint([]));
  });
});
