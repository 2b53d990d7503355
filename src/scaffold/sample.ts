/**
 * The sample custom resource of a scaffolded API: the chart's values.yaml as its `spec`, with the
 * chart's comments and key order kept (operator-sdk re-marshals the values, sorting keys and losing
 * every comment, so its samples document nothing).
 */
import { isMap, isScalar, visit, type YAMLMap } from 'yaml';
import { newHelmYamlDocument, parseHelmYamlDocument } from '../config/helm-yaml.js';

export interface SampleTarget {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
}

export interface SampleOptions {
  /** A comment block put above the document, e.g. where the values come from. */
  readonly header?: string;
}

/** values.yaml could not be used as a spec: it does not parse, or its top level is not a map. */
export class InvalidValuesError extends Error {
  override readonly name = 'InvalidValuesError';
  constructor(
    message: string,
    readonly reason: 'ParseError' | 'NotAMap',
  ) {
    super(message);
  }
}

const joinComments = (...parts: (string | null | undefined)[]): string | undefined => {
  const kept = parts.filter((p): p is string => typeof p === 'string' && p !== '');
  return kept.length === 0 ? undefined : kept.join('\n');
};

/**
 * Pure: the YAML text of a sample CR whose spec is `valuesYaml`'s content. An empty (or
 * comments-only) values file gives `spec: {}`. Throws InvalidValuesError when the values do not
 * parse or are not a map (helm refuses such a values file too).
 */
export function sampleCustomResource(valuesYaml: string, target: SampleTarget, options: SampleOptions = {}): string {
  const values = readValues(valuesYaml);
  // Read as helm reads values.yaml and written so that YAML 1.1 (kubectl) and 1.2 readers agree:
  // `enabled: yes` becomes `true`, `mode: 0400` becomes `0o400`.
  const sample = newHelmYamlDocument({
    apiVersion: target.apiVersion,
    kind: target.kind,
    metadata: { name: target.name },
    spec: {},
  });
  const contents = values.contents;
  if (contents === undefined) {
    // `spec: {}` is a flow map, which cannot hold comments: a comments-only values file goes above the key.
    const root = sample.contents;
    const key = isMap(root) ? root.items.find((pair) => isScalar(pair.key) && pair.key.value === 'spec')?.key : undefined;
    if (isScalar(key)) key.commentBefore = joinComments(values.commentBefore, values.comment);
  } else {
    // The document's leading and trailing comments belong to the values, so they move under spec.
    contents.commentBefore = joinComments(values.commentBefore, contents.commentBefore);
    contents.comment = joinComments(contents.comment, values.comment);
    sample.setIn(['spec'], contents);
  }
  if (options.header !== undefined) sample.commentBefore = options.header.replace(/^/gm, ' ');
  // lineWidth 0: long values (URLs, descriptions) are not folded onto new lines.
  return sample.toString({ lineWidth: 0 });
}

interface ValuesDocument {
  /** Undefined for an empty or comments-only file. */
  readonly contents: YAMLMap | undefined;
  readonly commentBefore: string | null;
  readonly comment: string | null;
}

function readValues(valuesYaml: string): ValuesDocument {
  const doc = parseHelmYamlDocument(valuesYaml, { prettyErrors: true });
  const error = doc.errors[0];
  if (error !== undefined) throw new InvalidValuesError(`values.yaml: ${error.message}`, 'ParseError');
  const contents = doc.contents;
  if (contents === null || (isScalar(contents) && contents.value === null)) {
    return { contents: undefined, commentBefore: doc.commentBefore, comment: doc.comment };
  }
  if (!isMap(contents)) throw new InvalidValuesError('values.yaml: the top level must be a map of values', 'NotAMap');
  dropShadowedKeys(contents);
  return { contents, commentBefore: doc.commentBefore, comment: doc.comment };
}

/**
 * helm keeps the last of duplicate keys (go-yaml v2); the sample keeps only that one, so that its
 * spec says what helm would read and a strict reader of the sample does not refuse it.
 */
function dropShadowedKeys(root: YAMLMap): void {
  visit(root, {
    Map(_key, map) {
      const last = new Map<unknown, unknown>();
      for (const pair of map.items) if (isScalar(pair.key)) last.set(keyOf(pair.key.value), pair);
      map.items = map.items.filter((pair) => !isScalar(pair.key) || last.get(keyOf(pair.key.value)) === pair);
    },
  });
}

/** Keys compare as helm's JSON does (`yes` and `true` are one key); every `<<` merge applies. */
const keyOf = (value: unknown): unknown => (typeof value === 'symbol' ? value : String(value));
