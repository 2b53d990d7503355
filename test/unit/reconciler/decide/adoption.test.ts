import { describe, expect, it } from 'vitest';
import { adoptingMessage, adoptionGround, manifestOwnerUids, notOwnedMessage } from '../../../../src/reconciler/decide/adoption.js';

const UID = '0b5e2c1e-6a43-4a8e-9d2f-7f6f0d3e2a11';
const ownedBy = (uid: string, name = 'web'): string =>
  [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata:',
    `  name: ${name}`,
    '  ownerReferences:',
    '  - apiVersion: example.com/v1',
    '    kind: Nginx',
    '    name: web',
    `    uid: ${uid}`,
    '    controller: true',
    '',
  ].join('\n');
const PLAIN = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n';
const hand = { storageOwnerUids: [], manifest: PLAIN };
const NO_WATCH = { adoptReleases: false };

describe('adoptionGround', () => {
  it("never adopts from the name alone: a release installed by hand is not the CR's", () => {
    expect(adoptionGround(hand, { uid: UID }, NO_WATCH)).toBeUndefined();
  });

  it('adopts any release of the chart when the watch says so (the migration switch)', () => {
    expect(adoptionGround(hand, { uid: UID }, { adoptReleases: true })).toBe('watch');
  });

  it("adopts a release whose storage names this CR instance as owner (operator-sdk's release Secrets)", () => {
    expect(adoptionGround({ storageOwnerUids: ['other', UID], manifest: PLAIN }, { uid: UID }, NO_WATCH)).toBe('owner-reference');
  });

  it("adopts a release whose stored manifest names this CR instance as owner (a post-renderer's ownerReferences)", () => {
    expect(adoptionGround({ storageOwnerUids: [], manifest: `${PLAIN}---\n${ownedBy(UID)}` }, { uid: UID }, NO_WATCH)).toBe(
      'owner-reference',
    );
  });

  it('does not adopt for another CR instance (a CR deleted and created again under the name), nor for a CR without a UID', () => {
    const release = { storageOwnerUids: ['old-uid'], manifest: ownedBy('old-uid') };
    expect(adoptionGround(release, { uid: UID }, NO_WATCH)).toBeUndefined();
    expect(adoptionGround({ storageOwnerUids: [''], manifest: PLAIN }, { uid: '' }, NO_WATCH)).toBeUndefined();
  });
});

describe('manifestOwnerUids', () => {
  it('collects the UIDs every object of the manifest names, Lists included', () => {
    const list = [
      'apiVersion: v1',
      'kind: List',
      'items:',
      '- apiVersion: v1',
      '  kind: Service',
      '  metadata:',
      '    name: svc',
      '    ownerReferences: [{uid: from-list}]',
      '',
    ].join('\n');
    expect(manifestOwnerUids(`${ownedBy('a')}---\n${ownedBy('b', 'other')}---\n${list}`)).toStrictEqual(new Set(['a', 'b', 'from-list']));
  });

  it('finds nothing in a manifest without owners, with malformed owners, or that cannot be read', () => {
    expect(manifestOwnerUids(PLAIN).size).toBe(0);
    expect(manifestOwnerUids('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  ownerReferences: {uid: not-a-list}\n').size).toBe(0);
    expect(manifestOwnerUids('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  ownerReferences: [{uid: 3}, "x"]\n').size).toBe(0);
    expect(manifestOwnerUids('a: [\n').size).toBe(0);
  });
});

describe('messages', () => {
  it('names the release, its chart, what is left alone and what to do', () => {
    const m = notOwnedMessage({ namespace: 'apps', name: 'web', kind: 'Nginx', chart: 'nginx-1.2.3' });
    expect(m).toContain('release "web" in namespace "apps" (chart nginx-1.2.3) was not installed by this operator');
    expect(m).toContain('not upgraded, and not uninstalled when this Nginx is deleted');
    expect(m).toContain('set adoptReleases: true on the Nginx watch in watches.yaml');
    expect(adoptingMessage('web', 'watch')).toContain('adoptReleases: true');
    expect(adoptingMessage('web', 'owner-reference')).toContain('owner');
  });
});
