/**
 * The CustomResourceDefinitions of a chart's `crds/` directories (the chart's own and its
 * subcharts', unpacked or `.tgz`), as helm reads them: every `.yaml`, `.yml` and `.json` file, each YAML document a
 * CRD; never templated. Read once with the chart, so the reconciler compares them with the cluster
 * without reading files (`crds: CreateReplace`, docs/adr/0075). Pure.
 */
import { isPlainObject } from '../util/plain-object.js';
import { readHelmYaml, splitHelmStream } from './helm-yaml.js';

/** One CRD of a chart's `crds/`. */
export interface ChartCrd {
  /** The file, relative to the chart (`crds/widgets.yaml`, `charts/db/crds/db.yaml`, `charts/db-1.0.0.tgz:crds/db.yaml`). */
  readonly file: string;
  /** `metadata.name`, e.g. `widgets.example.com`. */
  readonly name: string;
  /** The document as parsed. */
  readonly object: Readonly<Record<string, unknown>>;
}

// A subchart is a directory (`charts/db/`) or, in a label chart.ts gives, an archive (`charts/db-1.0.0.tgz:`).
const CRD_FILE = /^(?:charts\/(?:[^/]+\/|[^/:]+\.tgz:))*crds\/(?:.+\/)?[^/]+\.(?:ya?ml|json)$/;

/** Whether helm reads `path` (relative to the chart, a packed subchart's labelled `charts/<archive>:`) as a file of a `crds/` directory. */
export const isCrdFile = (path: string): boolean => CRD_FILE.test(path);

/**
 * Pure: the CRDs of the files given (path relative to the chart, text); a document that is not a
 * CustomResourceDefinition with a name is left to helm, which refuses it at install. Throws the
 * YAML parser's error, with the file, for a file that is not YAML.
 */
export function chartCrds(files: readonly { readonly path: string; readonly text: string }[]): ChartCrd[] {
  const out: ChartCrd[] = [];
  for (const f of files.filter((x) => isCrdFile(x.path)).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    // As helm reads them: cut where its apply cuts a stream, each document as YAML 1.1.
    for (const chunk of splitHelmStream(f.text)) {
      const object = readCrdDocument(f.path, chunk);
      if (!isPlainObject(object) || object.kind !== 'CustomResourceDefinition') continue;
      const name = isPlainObject(object.metadata) ? object.metadata.name : undefined;
      if (typeof name === 'string' && name !== '') out.push({ file: f.path, name, object });
    }
  }
  return out;
}

function readCrdDocument(file: string, text: string): unknown {
  try {
    return readHelmYaml(text);
  } catch (err) {
    throw new Error(`${file}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}
