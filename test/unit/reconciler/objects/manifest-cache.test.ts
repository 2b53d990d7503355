import { describe, expect, it } from 'vitest';
import { harness, NAME, NAMESPACE, record, UID } from '../actions/fakes.js';

describe('ManifestCache.confirm', () => {
  const cr = { namespace: NAMESPACE, name: NAME, uid: UID };
  const kept = async () => {
    const h = harness();
    await h.manifests.remember(NAME, UID, { namespace: NAMESPACE, revision: 2, manifest: '' });
    return h.manifests;
  };

  it('notes the kept revision of this instance as confirmed, never moving the time back', async () => {
    const m = await kept();
    m.confirm(cr, { record: record(2, 'deployed'), atMs: 500 });
    m.confirm(cr, { record: record(2, 'deployed'), atMs: 100 });
    expect(m.kept(NAMESPACE, NAME, UID)?.confirmed).toEqual({ record: record(2, 'deployed'), atMs: 500 });
  });

  it('ignores another revision, another instance, and a record that is not deployed', async () => {
    const m = await kept();
    m.confirm(cr, { record: record(3, 'deployed'), atMs: 1 });
    m.confirm({ ...cr, uid: 'other' }, { record: record(2, 'deployed'), atMs: 1 });
    m.confirm(cr, { record: record(2, 'superseded'), atMs: 1 });
    expect(m.kept(NAMESPACE, NAME, UID)?.confirmed).toBeUndefined();
  });

  it('forgets the confirmation when another revision is kept', async () => {
    const m = await kept();
    m.confirm(cr, { record: record(2, 'deployed'), atMs: 1 });
    await m.remember(NAME, UID, { namespace: NAMESPACE, revision: 3, manifest: '' });
    expect(m.kept(NAMESPACE, NAME, UID)?.confirmed).toBeUndefined();
  });
});

describe('ManifestCache.unconfirm', () => {
  it('drops the confirmation and keeps the revision', async () => {
    const h = harness();
    await h.manifests.remember(NAME, UID, { namespace: NAMESPACE, revision: 2, manifest: '' });
    h.manifests.confirm({ namespace: NAMESPACE, name: NAME, uid: UID }, { record: record(2, 'deployed'), atMs: 1 });
    h.manifests.unconfirm(NAMESPACE, NAME);
    expect(h.manifests.kept(NAMESPACE, NAME, UID)).toMatchObject({ revision: 2 });
    expect(h.manifests.kept(NAMESPACE, NAME, UID)?.confirmed).toBeUndefined();
    h.manifests.unconfirm(NAMESPACE, 'never-kept');
  });

  it('unconfirmAll drops every confirmation', async () => {
    const h = harness();
    await h.manifests.remember(NAME, UID, { namespace: NAMESPACE, revision: 2, manifest: '' });
    await h.manifests.remember('other', 'uid-other', { namespace: NAMESPACE, revision: 1, manifest: '' });
    h.manifests.confirm({ namespace: NAMESPACE, name: NAME, uid: UID }, { record: record(2, 'deployed'), atMs: 1 });
    h.manifests.confirm({ namespace: NAMESPACE, name: 'other', uid: 'uid-other' }, { record: record(1, 'deployed'), atMs: 1 });
    h.manifests.unconfirmAll();
    expect(h.manifests.kept(NAMESPACE, NAME, UID)?.confirmed).toBeUndefined();
    expect(h.manifests.kept(NAMESPACE, 'other', 'uid-other')?.confirmed).toBeUndefined();
    expect(h.manifests.kept(NAMESPACE, 'other', 'uid-other')).toMatchObject({ revision: 1 });
  });
});
