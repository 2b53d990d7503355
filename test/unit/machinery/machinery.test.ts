import { chmod, mkdtemp, readFile, rm, stat, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  applyPlan,
  create,
  formatPlan,
  formatResults,
  insert,
  insertAtMarker,
  upsertFramedAtMarker,
  InvalidPlanError,
  MarkerNotFoundError,
  ScaffoldConflictError,
  STATE_FILE,
  type Plan,
} from '../../../src/machinery/index.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'machinery-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const read = (p: string) => readFile(path.join(root, p), 'utf8');
const actions = (rs: { path: string; action: string }[]) => Object.fromEntries(rs.map((r) => [r.path, r.action]));

describe('insertAtMarker', () => {
  const text = 'resources:\n  - a.yaml\n  # +kubebuilder:scaffold:crd\n';

  it('inserts before the marker with its indentation, once', () => {
    const once = insertAtMarker(text, 'k.yaml', 'crd', '- b.yaml\n');
    expect(once).toBe('resources:\n  - a.yaml\n  - b.yaml\n  # +kubebuilder:scaffold:crd\n');
    expect(insertAtMarker(once, 'k.yaml', 'crd', '- b.yaml\n')).toBe(once);
  });

  it('replaces a framed section in place instead of adding a second one', () => {
    const rules = 'rules:\n  # +kubebuilder:scaffold:rules\n';
    const v1 = '# --- A\n- get\n# --- end of A\n';
    const v2 = '# --- A\n- get\n- list\n# --- end of A\n';
    const b = '# --- B\n- watch\n# --- end of B\n';
    const withA = upsertFramedAtMarker(rules, 'r', 'rules', v1);
    const withAB = upsertFramedAtMarker(withA, 'r', 'rules', b);
    const updated = upsertFramedAtMarker(withAB, 'r', 'rules', v2);
    expect(updated).toBe(
      'rules:\n  # --- A\n  - get\n  - list\n  # --- end of A\n  # --- B\n  - watch\n  # --- end of B\n  # +kubebuilder:scaffold:rules\n',
    );
    expect(upsertFramedAtMarker(updated, 'r', 'rules', v2)).toBe(updated);
    // Unframed inserts keep appending: a list entry is never "replaced".
    expect(insertAtMarker(withA, 'r', 'rules', v2)).toContain('- get\n  # --- end of A\n  # --- A');
  });

  it('names the file and marker when the marker is gone', () => {
    expect(() => insertAtMarker('x: 1\n', 'config/k.yaml', 'crd', '- b')).toThrow(MarkerNotFoundError);
    expect(() => insertAtMarker('x: 1\n', 'config/k.yaml', 'crd', '- b')).toThrow(/config\/k\.yaml: no "\+kubebuilder:scaffold:crd"/);
  });
});

describe('applyPlan', () => {
  const plan: Plan = [
    create('a/one.txt', 'one\n'),
    create('list.yaml', 'items:\n# +kubebuilder:scaffold:items\n', 'skip'),
    insert('list.yaml', 'items', '- x'),
    create('run.sh', '#!/bin/sh\n', 'overwrite', 0o755),
  ];

  it('creates, then reports everything unchanged on a re-run (idempotent)', async () => {
    expect(actions(await applyPlan(root, plan))).toEqual({ 'a/one.txt': 'created', 'list.yaml': 'created', 'run.sh': 'created' });
    expect(await read('list.yaml')).toBe('items:\n- x\n# +kubebuilder:scaffold:items\n');
    expect((await stat(path.join(root, 'run.sh'))).mode & 0o777).toBe(0o755);
    const again = await applyPlan(root, plan);
    expect(again.every((r) => r.action === 'unchanged')).toBe(true);
    const state = JSON.parse(await read(STATE_FILE)) as { files: Record<string, string> };
    expect(Object.keys(state.files).sort()).toEqual(['a/one.txt', 'list.yaml', 'run.sh']);
  });

  it('regenerates an unedited file but keeps an edited one unless forced', async () => {
    await applyPlan(root, plan);
    const v2: Plan = [create('a/one.txt', 'one v2\n'), create('run.sh', '#!/bin/sh\necho v2\n', 'overwrite', 0o755)];
    await writeFile(path.join(root, 'run.sh'), '#!/bin/sh\necho mine\n');
    const rs = await applyPlan(root, v2);
    expect(actions(rs)).toEqual({ 'a/one.txt': 'updated', 'run.sh': 'skipped' });
    expect(rs.find((r) => r.path === 'run.sh')?.reason).toMatch(/edited since it was generated/);
    expect(await read('a/one.txt')).toBe('one v2\n');
    expect(await read('run.sh')).toBe('#!/bin/sh\necho mine\n');
    expect(actions(await applyPlan(root, v2, { force: true }))).toEqual({ 'a/one.txt': 'unchanged', 'run.sh': 'updated' });
    expect(await read('run.sh')).toBe('#!/bin/sh\necho v2\n');
    // forced content is ours again: a later generation may replace it
    expect(actions(await applyPlan(root, [create('run.sh', 'v3\n')]))).toEqual({ 'run.sh': 'updated' });
  });

  it('follows an insert into a file it wrote with its hash: a later regeneration of the same content changes no file, the state included', async () => {
    // init writes the file, create api inserts its entry, the same create api again regenerates it whole.
    await applyPlan(root, [create('watches.yaml', '# +kubebuilder:scaffold:watch\n')]);
    await applyPlan(root, [insert('watches.yaml', 'watch', '- kind: A')]);
    const state = await read(STATE_FILE);
    expect(actions(await applyPlan(root, [create('watches.yaml', '- kind: A\n# +kubebuilder:scaffold:watch\n')]))).toEqual({
      'watches.yaml': 'unchanged',
    });
    expect(await read(STATE_FILE)).toBe(state);
    // A file the user edited stays theirs after an insert: its regeneration is skipped.
    await writeFile(path.join(root, 'watches.yaml'), '- kind: Mine\n# +kubebuilder:scaffold:watch\n');
    await applyPlan(root, [insert('watches.yaml', 'watch', '- kind: B')]);
    expect(actions(await applyPlan(root, [create('watches.yaml', '- kind: B\n# +kubebuilder:scaffold:watch\n')]))).toEqual({
      'watches.yaml': 'skipped',
    });
  });

  it("never overwrites a file it did not write, and skip-files stay the user's", async () => {
    await writeFile(path.join(root, 'a.txt'), 'user\n');
    expect(actions(await applyPlan(root, [create('a.txt', 'gen\n')]))).toEqual({ 'a.txt': 'skipped' });
    await applyPlan(root, plan);
    await writeFile(path.join(root, 'list.yaml'), 'items:\n- mine\n# +kubebuilder:scaffold:items\n');
    expect(actions(await applyPlan(root, plan))).toEqual({ 'a/one.txt': 'unchanged', 'list.yaml': 'updated', 'run.sh': 'unchanged' });
    expect(await read('list.yaml')).toBe('items:\n- mine\n- x\n# +kubebuilder:scaffold:items\n');
  });

  it('stops before writing anything on an ifExists=error conflict', async () => {
    await writeFile(path.join(root, 'taken.txt'), 'other\n');
    const p: Plan = [create('new.txt', 'n\n'), create('taken.txt', 'mine\n', 'error')];
    await expect(applyPlan(root, p)).rejects.toThrow(ScaffoldConflictError);
    await expect(read('new.txt')).rejects.toThrow(/ENOENT/);
    expect(actions(await applyPlan(root, p, { force: true }))).toEqual({ 'new.txt': 'created', 'taken.txt': 'updated' });
  });

  it('stops before writing anything when a marker or the target file is missing', async () => {
    await mkdir(path.join(root, 'c'));
    await writeFile(path.join(root, 'c/k.yaml'), 'no marker\n');
    await expect(applyPlan(root, [create('x.txt', 'x'), insert('c/k.yaml', 'm', 'y')])).rejects.toThrow(MarkerNotFoundError);
    await expect(applyPlan(root, [create('x.txt', 'x'), insert('nope.yaml', 'm', 'y')])).rejects.toThrow(InvalidPlanError);
    await expect(read('x.txt')).rejects.toThrow(/ENOENT/);
  });

  it('rejects paths outside the project', async () => {
    for (const bad of ['../x', '/etc/x', 'a/../../x', 'a//b']) {
      await expect(applyPlan(root, [create(bad, 'x')])).rejects.toThrow(InvalidPlanError);
    }
  });

  it('writes nothing on a dry run but reports what it would do', async () => {
    const rs = await applyPlan(root, plan, { dryRun: true });
    expect(actions(rs)).toEqual({ 'a/one.txt': 'created', 'list.yaml': 'created', 'run.sh': 'created' });
    await expect(read('a/one.txt')).rejects.toThrow(/ENOENT/);
    await expect(read(STATE_FILE)).rejects.toThrow(/ENOENT/);
    expect(formatResults(rs, true)).toContain('would be created  a/one.txt');
    expect(formatPlan(plan)).toContain('insert list.yaml at +kubebuilder:scaffold:items');
  });

  it('writes binary bodies byte for byte', async () => {
    const bytes = new Uint8Array([0, 255, 1, 128]);
    await applyPlan(root, [create('c.tgz', bytes)]);
    expect(new Uint8Array(await readFile(path.join(root, 'c.tgz')))).toEqual(bytes);
    expect(actions(await applyPlan(root, [create('c.tgz', bytes)]))).toEqual({ 'c.tgz': 'unchanged' });
  });

  it('reports an unreadable file as an error, not as absent', async () => {
    await writeFile(path.join(root, 'locked.txt'), 'x');
    await chmod(path.join(root, 'locked.txt'), 0o000);
    if (process.getuid?.() === 0) return; // root reads anything
    await expect(applyPlan(root, [create('locked.txt', 'y')])).rejects.toThrow(/EACCES/);
  });
});
