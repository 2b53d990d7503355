/** Every sample of `name` in Prometheus text output whose labels include `labels`. */
function samples(text: string, name: string, labels: Record<string, string>): number[] {
  const out: number[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m?.[1] !== name) continue;
    const got = new Map([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l): [string, string] => [l[1] ?? '', l[2] ?? '']));
    if (Object.entries(labels).every(([k, v]) => got.get(k) === v)) out.push(Number(m[3]));
  }
  return out;
}

/** The value of one sample in Prometheus text output; undefined when the series is absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  return samples(text, name, labels)[0];
}

/** The sum of every series of `name` whose labels include `labels` (0 when there is none). */
export function total(text: string, name: string, labels: Record<string, string> = {}): number {
  return samples(text, name, labels).reduce((a, b) => a + b, 0);
}
