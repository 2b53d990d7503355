// Runs first in every npm script (package.json): on an older Node the scripts die deep in a
// dependency (undici's createZstdDecompress, on Node 20), which names neither the cause nor the fix.
// Plain JavaScript with no imports of the project's, so that any Node can run it.
import { readFileSync } from 'node:fs';

const engines = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines?.node ?? '';
const need = Number(/(\d+)/.exec(engines)?.[1] ?? 0);
const have = Number(process.versions.node.split('.')[0]);
if (have < need) {
  process.stderr.write(
    `helm-operator-ts needs Node ${engines} and this is Node ${process.versions.node} (${process.execPath}).\n` +
      `Run it through make (make test, make bench, make lint, ...), which fetches a Node ${need} into its cache, or put that Node first on PATH:\n` +
      `  export PATH="$(bash hack/tools.sh node-dir):$PATH"\n`,
  );
  process.exit(1);
}
