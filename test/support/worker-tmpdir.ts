/**
 * Each integration file gets a temporary directory of its own, for itself and every process it
 * starts (os.tmpdir() reads TMPDIR; children inherit it). Files run side by side on one machine, and
 * what an operator keeps under the temporary directory (helm's plugin and values files, its instance
 * marker) must not be another file's operator's.
 *
 * A worker runs several files one after another (the projects are not isolated): each file's
 * directory is made under the worker's own temporary directory, not under the previous file's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

const BASE = Symbol.for('helm-operator-ts.worker-tmpdir.base');
const worker = globalThis as { [BASE]?: string };
worker[BASE] ??= os.tmpdir();
const dir = mkdtempSync(path.join(worker[BASE], 'it-'));
process.env.TMPDIR = dir;

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});
