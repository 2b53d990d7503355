/**
 * The CustomResourceDefinitions of a chart's `crds/` directories (the chart's own and its unpacked
 * subcharts'), as helm reads them: every `.yaml`, `.yml` and `.json` file, each YAML document a
 * CRD; never templated. Read once with the chart, so the reconciler compares them with the cluster
 * without reading files (`crds: CreateReplace`, docs/adr/0075). Pure.
 */
import { parseAllDocuments } from 'yaml';
import { isPlainObject } from '../util/plain-object.js';

/** One CRD of a chart's `crds/`. */
export interface ChartCrd {
  /** The file, relative to the chart (`crds/widgets.yaml`, `charts/db/crds/db.yaml`). */
  readonly file: string;
  /** `metadata.name`, e.g. `widgets.example.com`. */
  readonly name: string;
  /** The document as parsed. */
  readonly object: Readonly<Record<string, unknown>>;
}

const CRD_FILE = /^(?:charts\/[^/]+\/)*crds\/(?:.+\/)?[^/]+\.(?:ya?ml|json)$/;

/** Whether helm reads `path` (relative to the chart) as a file of a `crds/` directory. */
export const isCrdFile = (path: string): boolean => CRD_FILE.test(path);

/**
 * Pure: the CRDs of the files given (path relative to the chart, text); a document that is not a
 * CustomResourceDefinition with a name is left to helm, which refuses it at install. Throws the
 * YAML parser's error, with the file, for a file that is not YAML.
 */
export function chartCrds(files: readonly { readonly path: string; readonly text: string }[]): ChartCrd[] {
  const out: ChartCrd[] = [];
  for (const f of files.filter((x) => isCrdFile(x.path)).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    for (const doc of parseAllDocuments(f.text)) {
      if (doc.errors.length > 0) throw new Error(`${f.path}: ${doc.errors[0]?.message ?? 'not YAML'}`);
      const object: unknown = doc.toJS();
      if (!isPlainObject(object) || object.kind !== 'CustomResourceDefinition') continue;
      const name = isPlainObject(object.metadata) ? object.metadata.name : undefined;
      if (typeof name === 'string' && name !== '') out.push({ file: f.path, name, object });
    }
  }
  return out;
}
