/** Insertion at `+kubebuilder:scaffold:<marker>` comments: pure text functions. */
import { markerText } from './plan.js';

export class MarkerNotFoundError extends Error {
  override readonly name = 'MarkerNotFoundError';
  constructor(
    readonly path: string,
    readonly marker: string,
  ) {
    super(`${path}: no "${markerText(marker)}" comment to insert at (restore the marker line, or add the entry by hand)`);
  }
}

const indent = (fragment: string, prefix: string): string[] =>
  fragment
    .replace(/\n+$/, '')
    .split('\n')
    .map((line) => (line === '' ? line : prefix + line));

/**
 * `text` with `fragment` inserted before the marker line, or `text` itself when the fragment's lines
 * already appear there in a row (so inserting is idempotent even after the user moved things around).
 * @throws MarkerNotFoundError
 */
export function insertAtMarker(text: string, path: string, marker: string, fragment: string): string {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.includes(markerText(marker)));
  if (at < 0) throw new MarkerNotFoundError(path, marker);
  const prefix = /^\s*/.exec(lines[at] ?? '')?.[0] ?? '';
  const block = indent(fragment, prefix);
  if (containsBlock(lines, block)) return text;
  return [...lines.slice(0, at), ...block, ...lines.slice(at)].join('\n');
}

/**
 * Like {@link insertAtMarker} for a fragment whose first and last lines frame a section: when both
 * are already in `text` (in that order), the section is replaced in place instead of a second copy
 * being inserted.
 * @throws MarkerNotFoundError
 */
export function upsertFramedAtMarker(text: string, path: string, marker: string, fragment: string): string {
  const inserted = insertAtMarker(text, path, marker, fragment);
  if (inserted === text) return text;
  const lines = text.split('\n');
  const frame = fragment.replace(/\n+$/, '').split('\n');
  const first = frame[0]?.trim() ?? '';
  const last = frame[frame.length - 1]?.trim() ?? '';
  const start = lines.findIndex((l) => l.trim() === first);
  const end = lines.findIndex((l, i) => i > start && l.trim() === last);
  if (frame.length < 2 || start < 0 || end < 0) return inserted;
  const prefix = /^\s*/.exec(lines[start] ?? '')?.[0] ?? '';
  return [...lines.slice(0, start), ...indent(fragment, prefix), ...lines.slice(end + 1)].join('\n');
}

function containsBlock(lines: readonly string[], block: readonly string[]): boolean {
  const trimmed = lines.map((l) => l.trimEnd());
  const want = block.map((l) => l.trimEnd());
  if (want.length === 0) return true;
  for (let i = 0; i + want.length <= trimmed.length; i++) {
    if (want.every((w, j) => trimmed[i + j] === w)) return true;
  }
  return false;
}
