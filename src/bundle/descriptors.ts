/**
 * An owned-CRD entry of a ClusterServiceVersion derived from any CRD's openAPIV3Schema: the top-level
 * `spec` properties become spec descriptors (path, display name, description), `status.conditions`
 * becomes the conditions status descriptor. Generic on purpose: it works on a typed CRD from
 * values.schema.json and on a schemaless one (then there are simply no descriptors).
 */
import { isPlainObject } from '../util/plain-object.js';
import type { K8sObject, Obj } from './types.js';

export interface Descriptor {
  path: string;
  displayName: string;
  description?: string;
  'x-descriptors'?: string[];
}

export interface OwnedCrd {
  name: string;
  version: string;
  kind: string;
  displayName: string;
  description: string;
  specDescriptors?: Descriptor[];
  statusDescriptors?: Descriptor[];
}

/** `replicaCount` → `Replica Count`, `image` → `Image`. */
export function displayNameOf(key: string): string {
  const words = key
    .replace(/[_-]+/g, ' ')
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/\s+/)
    .filter(Boolean);
  return words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(' ');
}

const propertiesOf = (schema: unknown): Obj => (isPlainObject(schema) && isPlainObject(schema['properties']) ? schema['properties'] : {});

export function specDescriptors(schema: unknown): Descriptor[] {
  const spec = propertiesOf(schema)['spec'];
  return Object.entries(propertiesOf(spec))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, prop]) => {
      const description = isPlainObject(prop) && typeof prop['description'] === 'string' ? prop['description'] : undefined;
      return { path: key, displayName: displayNameOf(key), ...(description === undefined ? {} : { description }) };
    });
}

export function statusDescriptors(schema: unknown): Descriptor[] {
  const status = propertiesOf(schema)['status'];
  const conditions = propertiesOf(status)['conditions'];
  if (conditions === undefined) return [];
  return [
    {
      path: 'conditions',
      displayName: 'Conditions',
      description: 'The state of the release and of its objects',
      'x-descriptors': ['urn:alm:descriptor:io.kubernetes.conditions'],
    },
  ];
}

/** One entry per served version of the CRD. */
export function ownedEntries(crd: K8sObject): OwnedCrd[] {
  const spec = isPlainObject(crd['spec']) ? crd['spec'] : {};
  const names = isPlainObject(spec['names']) ? spec['names'] : {};
  const kind = typeof names['kind'] === 'string' ? names['kind'] : '';
  const versions = Array.isArray(spec['versions']) ? spec['versions'].filter(isPlainObject) : [];
  return versions
    .filter((v) => v['served'] !== false)
    .map((v) => {
      const schema = isPlainObject(v['schema']) ? v['schema']['openAPIV3Schema'] : undefined;
      const top = isPlainObject(schema) && typeof schema['description'] === 'string' ? schema['description'] : undefined;
      const spec = specDescriptors(schema);
      const status = statusDescriptors(schema);
      return {
        name: crd.metadata.name,
        version: String(v['name']),
        kind,
        displayName: displayNameOf(kind),
        description: top ?? `${displayNameOf(kind)}: a release of its helm chart`,
        ...(spec.length > 0 ? { specDescriptors: spec } : {}),
        ...(status.length > 0 ? { statusDescriptors: status } : {}),
      };
    });
}
