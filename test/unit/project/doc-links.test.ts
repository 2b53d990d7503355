/**
 * The README is short and the reference lives in docs/: every relative link of README.md and
 * docs/ must lead to a file that exists (and to a heading, when it names one), every docs/ page
 * must be one link away from the README, and what the npm package ships must not link out of it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchors, relativeLinks, slug } from '../../support/markdown-links.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const read = (rel: string): string => readFileSync(path.join(ROOT, rel), 'utf8');
const mdIn = (dir: string): string[] =>
  readdirSync(path.join(ROOT, dir))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `${dir}/${f}`)
    .sort();
const PAGES = ['README.md', ...mdIn('docs'), ...mdIn('docs/adr')];

/** A link's file (relative to the repository) and its fragment, if any. */
function resolve(from: string, target: string): { file: string; fragment?: string } {
  const hash = target.indexOf('#');
  const rawPath = hash < 0 ? target : target.slice(0, hash);
  const fragment = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const file = rawPath === '' ? from : path.posix.normalize(path.posix.join(path.posix.dirname(from), decodeURIComponent(rawPath)));
  return fragment === undefined ? { file } : { file, fragment };
}

/** What is wrong with one link, or undefined when it leads somewhere. */
function brokenLink(
  from: string,
  target: string,
  exists: (rel: string) => boolean,
  anchorsOf: (rel: string) => Set<string>,
): string | undefined {
  const { file, fragment } = resolve(from, target);
  if (file.startsWith('..') || !exists(file)) return `${file} does not exist`;
  if (fragment !== undefined && file.endsWith('.md') && !anchorsOf(file).has(fragment)) return `${file} has no heading #${fragment}`;
  return undefined;
}

function brokenLinks(pages: readonly string[], exists: (rel: string) => boolean, text: (rel: string) => string): string[] {
  const cache = new Map<string, Set<string>>();
  const anchorsOf = (rel: string): Set<string> => {
    const known = cache.get(rel) ?? anchors(text(rel));
    cache.set(rel, known);
    return known;
  };
  return pages.flatMap((page) =>
    relativeLinks(text(page)).flatMap(({ target, line }) => {
      const problem = brokenLink(page, target, exists, anchorsOf);
      return problem === undefined ? [] : [`${page}:${line}: (${target}) ${problem}`];
    }),
  );
}

const onDisk = (rel: string): boolean => existsSync(path.join(ROOT, rel));

/** Whether `npm pack` ships the file (or, for a directory, something in it), by package.json `files`. */
function packed(files: readonly string[], rel: string): boolean {
  const full = path.join(ROOT, rel);
  if (existsSync(full) && statSync(full).isDirectory()) {
    return readdirSync(full).some((f) => packed(files, `${rel.replace(/\/$/, '')}/${f}`));
  }
  return files.some((pattern) => pattern === rel || path.matchesGlob(rel, pattern));
}

describe('links in README.md and docs/', () => {
  it('every relative link leads to a file that exists, and to a heading it names', () => {
    expect(brokenLinks(PAGES, onDisk, read)).toEqual([]);
  });

  it('every docs/ page is linked from the README', () => {
    const linked = new Set(relativeLinks(read('README.md')).map(({ target }) => resolve('README.md', target).file));
    expect(mdIn('docs').filter((page) => !linked.has(page))).toEqual([]);
  });

  it('the npm package ships what its Markdown links to', () => {
    const files = (JSON.parse(read('package.json')) as { files: string[] }).files;
    const shipped = PAGES.filter((page) => packed(files, page));
    expect(shipped).toContain('README.md');
    expect(brokenLinks(shipped, (rel) => onDisk(rel) && packed(files, rel), read)).toEqual([]);
  });

  it('tells a missing file, a missing heading and a link out of the repository apart from good links', () => {
    const pages: Record<string, string> = {
      'README.md':
        '# Top\n[ok](docs/a.md#the-b-flag) [self](#top) ![img](docs/x.svg) [web](https://example.com)\n`[code](nowhere.md)`\n```\n[fenced](nowhere.md)\n```\n[gone](docs/b.md) [bad anchor](docs/a.md#nope) [out](../x.md)\n',
      'docs/a.md': '# A\n## The `b` flag\n[back](../README.md#top)\n',
      'docs/x.svg': '',
    };
    const problems = brokenLinks(
      ['README.md', 'docs/a.md'],
      (rel) => rel in pages,
      (rel) => pages[rel] ?? '',
    );
    expect(problems).toEqual([
      'README.md:7: (docs/b.md) docs/b.md does not exist',
      'README.md:7: (docs/a.md#nope) docs/a.md has no heading #nope',
      'README.md:7: (../x.md) ../x.md does not exist',
    ]);
  });

  it('slugs headings as GitHub does, repeated ones numbered', () => {
    expect(slug("Compared with operator-sdk's image")).toBe('compared-with-operator-sdks-image');
    expect(slug('`init` and `create api`')).toBe('init-and-create-api');
    expect(slug('Churn: the same CRs deleted and created again (issue 28)')).toBe('churn-the-same-crs-deleted-and-created-again-issue-28');
    expect([...anchors('# Status\n```\n# not a heading\n```\n## Status\n### Status\n')]).toEqual(['status', 'status-1', 'status-2']);
  });
});
