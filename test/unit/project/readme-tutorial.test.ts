/**
 * The README's operator-author tutorial is what the tutorial tier runs (test/tutorial): its block,
 * marked `<!-- tutorial: ... -->`, lists exactly the tier's commands, in order (comments aside).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { README_SCRIPT } from '../../tutorial/tutorial-commands.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

/** The commands of the fenced block after the marker: comment lines and trailing ` # ...` dropped. */
function tutorialBlock(readme: string): string[] {
  const marker = readme.indexOf('<!-- tutorial: test/tutorial/tutorial-commands.ts -->');
  if (marker < 0) return [];
  const block = /```bash\n([\s\S]*?)```/.exec(readme.slice(marker))?.[1] ?? '';
  return block
    .split('\n')
    .map((l) => l.replace(/\s+# .*$/, '').trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

describe('the README tutorial and the tutorial tier', () => {
  it('list the same commands in the same order', async () => {
    expect(tutorialBlock(await readFile(path.join(ROOT, 'README.md'), 'utf8'))).toEqual(README_SCRIPT);
  });

  it('a comment is not a command, and a changed command is told apart', () => {
    const readme = '<!-- tutorial: test/tutorial/tutorial-commands.ts -->\n```bash\n# intro\nmake install   # the CRD\n\nmake run\n```\n';
    expect(tutorialBlock(readme)).toEqual(['make install', 'make run']);
    expect(tutorialBlock(readme.replace('make run', 'make run ARGS=-v'))).not.toEqual(['make install', 'make run']);
  });
});
