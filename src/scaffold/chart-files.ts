/** A chart directory's files, as plan input (binary-safe: subchart archives in charts/). */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChartFile } from '../config/chart.js';

export async function readChartFiles(dir: string, rel = ''): Promise<ChartFile[]> {
  const out: ChartFile[] = [];
  const entries = await readdir(path.join(dir, rel), { withFileTypes: true });
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const p = rel === '' ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) out.push(...(await readChartFiles(dir, p)));
    else if (e.isFile()) out.push({ path: p, data: await readFile(path.join(dir, p)) });
    // The chart was copied with its links followed (chart-source.ts): anything else is not copied silently.
    else throw new Error(`chart file ${p} in ${dir} is neither a file nor a directory: not copied into the project`);
  }
  return out;
}
