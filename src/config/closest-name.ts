/** "Did you mean": the known name a misspelt one is closest to. */

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost));
    }
    prev = row;
  }
  return prev[b.length] ?? 0;
}

/** The known name a misspelt one most likely meant, if any is close enough to be worth saying. */
export function closestName(word: string, known: readonly string[]): string | undefined {
  const norm = (s: string): string => s.toLowerCase().replace(/[-_ ]/g, '');
  const w = norm(word);
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const c = norm(candidate);
    // "labelSelector" → "selector", "reconcilePeriodSeconds" → "reconcilePeriod".
    const contains = Math.min(c.length, w.length) >= 4 && (w.includes(c) || c.includes(w));
    const distance = w === c ? 0 : contains ? 1 : editDistance(w, c);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}
