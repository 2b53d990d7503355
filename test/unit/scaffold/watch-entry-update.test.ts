import { describe, expect, it } from 'vitest';
import { apiNames } from '../../../src/scaffold/names.js';
import { watchEntry } from '../../../src/scaffold/templates/api.js';
import { updateWatchEntry } from '../../../src/scaffold/watch-entry-update.js';

const shop = apiNames({ group: 'apps', version: 'v1alpha1', kind: 'Shop' }, 'example.com');
const cart = apiNames({ group: 'apps', version: 'v1alpha1', kind: 'Cart' }, 'example.com');
const allow = (...kinds: string[]): { kinds: string[]; optional: { when: string; kinds: string[] }[] } => ({ kinds, optional: [] });

describe('updateWatchEntry: a chart update regenerates its kind’s watch in place', () => {
  const file = [
    '# Use the create api subcommand to add watches to this file.',
    watchEntry(cart, 'cart', allow('ConfigMap')).trimEnd(),
    watchEntry(shop, 'shop', {
      kinds: ['ConfigMap'],
      optional: [{ when: 'ingress.enabled=true', kinds: ['Ingress.networking.k8s.io'] }],
    }).trimEnd(),
    '  reconcilePeriod: 2m',
    '  overrideValues:',
    '    image.tag: fixed',
    '# +kubebuilder:scaffold:watch',
    '',
  ].join('\n');

  it('replaces chart and allowKinds (and their comments), keeps the author’s lines and the other kinds', () => {
    const next = updateWatchEntry(file, shop, watchEntry(shop, 'shop-v2', allow('ConfigMap', 'Service')));
    expect(next).toBe(
      [
        '# Use the create api subcommand to add watches to this file.',
        watchEntry(cart, 'cart', allow('ConfigMap')).trimEnd(),
        watchEntry(shop, 'shop-v2', allow('ConfigMap', 'Service')).trimEnd(),
        '  reconcilePeriod: 2m',
        '  overrideValues:',
        '    image.tag: fixed',
        '# +kubebuilder:scaffold:watch',
        '',
      ].join('\n'),
    );
    // Once regenerated, the same update changes nothing (create api's re-run is idempotent).
    expect(updateWatchEntry(next ?? '', shop, watchEntry(shop, 'shop-v2', allow('ConfigMap', 'Service')))).toBe(next);
  });

  it('is undefined when the file has no entry for the kind (another version is another kind)', () => {
    expect(updateWatchEntry(file, { ...shop, version: 'v1beta1' }, watchEntry(shop, 'shop', allow()))).toBeUndefined();
  });
});
