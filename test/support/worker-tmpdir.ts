/**
 * Each integration file gets a temporary directory of its own, for itself and every process it
 * starts (os.tmpdir() reads TMPDIR; children inherit it). Files run side by side on one machine, and
 * what an operator keeps under the temporary directory (helm's plugin and values files, its instance
 * marker) must not be another file's operator's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

const dir = mkdtempSync(path.join(os.tmpdir(), 'it-'));
process.env.TMPDIR = dir;

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});
