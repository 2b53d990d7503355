/**
 * What the writer generated: a sha256 per generated file, in a small JSON file at the project root.
 * A file whose content still has the recorded hash was not edited by the user, so regenerating it
 * is safe; any other content is the user's and is only replaced with `--force`.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

export const STATE_FILE = '.scaffold-state.json';

export interface ScaffoldState {
  readonly version: 1;
  /** path → sha256 hex of the content the writer last wrote there. */
  readonly files: Readonly<Record<string, string>>;
}

export const sha256 = (body: string | Uint8Array): string => createHash('sha256').update(body).digest('hex');

export async function readState(root: string): Promise<ScaffoldState> {
  let text: string;
  try {
    text = await readFile(path.join(root, STATE_FILE), 'utf8');
  } catch {
    return { version: 1, files: {} };
  }
  const parsed = JSON.parse(text) as Partial<ScaffoldState>;
  return { version: 1, files: typeof parsed.files === 'object' ? { ...parsed.files } : {} };
}

export const serializeState = (state: ScaffoldState): string =>
  `${JSON.stringify({ version: 1, files: Object.fromEntries(Object.entries(state.files).sort(([a], [b]) => a.localeCompare(b))) }, null, 2)}\n`;
