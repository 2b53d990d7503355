/** The value of one sample in Prometheus text output; undefined when the series is absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m?.[1] !== name) continue;
    const got = new Map([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l): [string, string] => [l[1] ?? '', l[2] ?? '']));
    if (Object.entries(labels).every(([k, v]) => got.get(k) === v)) return Number(m[3]);
  }
  return undefined;
}
