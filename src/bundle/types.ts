/** The shapes the bundle generator and validator share. Manifests are plain parsed YAML. */
import { isPlainObject } from '../util/plain-object.js';

export type Obj = Record<string, unknown>;

export interface K8sObject extends Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> } & Obj;
}

export function isK8sObject(v: unknown): v is K8sObject {
  return (
    isPlainObject(v) &&
    typeof v['apiVersion'] === 'string' &&
    typeof v['kind'] === 'string' &&
    isPlainObject(v['metadata']) &&
    typeof v['metadata']['name'] === 'string'
  );
}

/** The value at a path of plain objects, or undefined. */
export const get = (o: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((v, k) => (isPlainObject(v) ? v[k] : Array.isArray(v) ? (v as unknown[])[Number(k)] : undefined), o);
/** The object entries of an array value, or []. */
export const objs = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isPlainObject) : []);

/** Kinds a registry+v1 bundle may carry besides the CSV and CRDs (operator-registry's supported_resources.go). */
export const REGISTRY_V1_KINDS: ReadonlySet<string> = new Set([
  'ClusterServiceVersion',
  'CustomResourceDefinition',
  'Secret',
  'ClusterRole',
  'ClusterRoleBinding',
  'ConfigMap',
  'ServiceAccount',
  'Service',
  'Role',
  'RoleBinding',
  'PrometheusRule',
  'ServiceMonitor',
  'PodDisruptionBudget',
  'PriorityClass',
  'VerticalPodAutoscaler',
  'ConsoleYAMLSample',
  'ConsoleQuickStart',
  'ConsoleCLIDownload',
  'ConsoleLink',
  'NetworkPolicy',
]);

export const BUILDER = 'helm-operator-ts';
export const PROJECT_LAYOUT = 'helm.sdk.operatorframework.io/v1';
export const INSTALL_MODES = ['OwnNamespace', 'SingleNamespace', 'MultiNamespace', 'AllNamespaces'] as const;
