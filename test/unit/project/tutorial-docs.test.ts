/**
 * The operator-author tutorial in docs/tutorial.md is what the tutorial tier runs (test/tutorial):
 * its block, marked `<!-- tutorial: ... -->`, lists exactly the tier's commands, in order (comments
 * aside). The README shows the first steps, marked `<!-- tutorial-start: ... -->`: they are the
 * tier's first commands, so neither page can drift from what the tier runs.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NOT_RUN_HERE, T, TUTORIAL_SCRIPT } from '../../tutorial/tutorial-commands.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const FULL = '<!-- tutorial: test/tutorial/tutorial-commands.ts -->';
const START = '<!-- tutorial-start: docs/tutorial.md -->';

/** The commands of the fenced block after the marker: comment lines and trailing ` # ...` dropped. */
function commandBlock(markdown: string, marker: string): string[] {
  const at = markdown.indexOf(marker);
  if (at < 0) return [];
  const block = /```bash\n([\s\S]*?)```/.exec(markdown.slice(at))?.[1] ?? '';
  return block
    .split('\n')
    .map((l) => l.replace(/\s+# .*$/, '').trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

describe('the tutorial pages and the tutorial tier', () => {
  it('docs/tutorial.md lists the same commands in the same order', async () => {
    expect(commandBlock(await readFile(path.join(ROOT, 'docs/tutorial.md'), 'utf8'), FULL)).toEqual(TUTORIAL_SCRIPT);
  });

  it("the README's first steps are the tutorial's first commands", async () => {
    const first = commandBlock(await readFile(path.join(ROOT, 'README.md'), 'utf8'), START);
    expect(first.length).toBeGreaterThan(0);
    expect(first).toEqual(TUTORIAL_SCRIPT.slice(0, first.length));
  });

  it('the tier stops at make bundle; each later command is run by the test files it names', () => {
    const rest = TUTORIAL_SCRIPT.slice(TUTORIAL_SCRIPT.indexOf(T.bundle) + 1);
    expect(NOT_RUN_HERE.map((c) => c.command)).toEqual(rest);
    for (const c of NOT_RUN_HERE)
      for (const file of c.coveredBy) expect(existsSync(path.join(ROOT, file)), `${c.command}: ${file}`).toBe(true);
  });

  it('a comment is not a command, and a changed command is told apart', () => {
    const page = `${FULL}\n\`\`\`bash\n# intro\nmake install   # the CRD\n\nmake run\n\`\`\`\n`;
    expect(commandBlock(page, FULL)).toEqual(['make install', 'make run']);
    expect(commandBlock(page.replace('make run', 'make run ARGS=-v'), FULL)).not.toEqual(['make install', 'make run']);
    expect(commandBlock(page, START)).toEqual([]);
  });
});
