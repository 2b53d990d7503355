/**
 * Every npm script checks the Node version first (hack/need-node.mjs): on the system's older Node
 * the scripts would otherwise die deep in a dependency (undici's createZstdDecompress, module
 * registerHooks) with a stack trace that names neither the cause nor the fix.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const scripts = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** Scripts that reach the check another way, and how. */
const CHECKED_ELSEWHERE: Readonly<Record<string, RegExp>> = {
  // The executable re-runs itself on the pinned Node (src/cli/node-launch.ts).
  start: /^node dist\/cli\/main\.js\b/,
  // Deletes dist/ with any Node, then `npm run build`, which checks.
  prepack: /&& npm run build\b/,
};

describe('npm scripts', () => {
  it('each says it needs Node 24 and how to get it before it runs anything of the project', () => {
    const unchecked = Object.entries(scripts).filter(([name, cmd]) => {
      const elsewhere = CHECKED_ELSEWHERE[name];
      return elsewhere === undefined ? !cmd.startsWith('node hack/need-node.mjs && ') : !elsewhere.test(cmd);
    });
    expect(unchecked).toEqual([]);
  });
});
