/**
 * The relative links of a Markdown page and the anchors its headings get, as GitHub renders them:
 * enough for test/unit/project/doc-links.test.ts to tell a link that leads nowhere.
 */

/** A link written in the page: its target as written, and the 1-based line it is on. */
export interface Link {
  readonly target: string;
  readonly line: number;
}

/** Lines outside fenced code blocks (which hold neither links nor headings). */
function proseLines(markdown: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((raw, i) => {
    const opener = /^\s*(```+|~~~+)/.exec(raw)?.[1];
    if (fence !== undefined) {
      if (opener !== undefined && opener[0] === fence[0] && opener.length >= fence.length) fence = undefined;
      return;
    }
    if (opener !== undefined) {
      fence = opener;
      return;
    }
    out.push({ text: raw, line: i + 1 });
  });
  return out;
}

/** Inline links and images (`[text](target)`, `![alt](target "title")`) that are not URLs with a scheme. */
export function relativeLinks(markdown: string): Link[] {
  const links: Link[] = [];
  for (const { text, line } of proseLines(markdown)) {
    // Inline code shows link syntax without making a link.
    const prose = text.replace(/`+[^`]*`+/g, (code) => ' '.repeat(code.length));
    for (const m of prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1] ?? '';
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push({ target, line });
    }
  }
  return links;
}

/** GitHub's heading slug: the rendered text, lower-cased, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link shows its text
    .replace(/`([^`]*)`/g, '$1')
    .replace(/(\*\*|__|\*)/g, '');
  return rendered
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor the page's ATX headings get, a repeated one suffixed -1, -2, … as GitHub does. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { text } of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}
