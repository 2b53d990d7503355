/**
 * `run bundle`'s catalog served inside a cluster whose nodes run containers, as operator-sdk serves
 * it: the one-bundle file-based catalog in a ConfigMap, a registry pod from the opm image serving it
 * (`opm serve`), and the CatalogSource naming the pod's address; the pod and ConfigMap are owned by
 * the CatalogSource, so deleting it deletes them (docs/adr/0064).
 */
import type { ResourceRef } from '../k8s/raw-client.js';
import { poll, type Cluster, type Obj } from './cluster.js';
import { OlmError } from './errors.js';
import { MAX_CATALOG_BYTES, podStuck, REGISTRY_PORT, registryObjects } from './in-cluster.js';

const PODS = (namespace: string): ResourceRef => ({ group: '', version: 'v1', plural: 'pods', namespace });
const CONFIGMAPS = (namespace: string): ResourceRef => ({ group: '', version: 'v1', plural: 'configmaps', namespace });

export interface RegistryPod {
  readonly name: string;
  readonly namespace: string;
  readonly packageName: string;
  readonly catalog: string;
  readonly opmImage: string;
  readonly labels: Record<string, string>;
}

const podReady = (p: Obj | undefined): boolean => p?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** Until no pod of `names` is left (a pod's spec cannot be changed: a new run replaces it). */
async function podsGone(c: Cluster, namespace: string, names: readonly string[], timeoutMs: number): Promise<void> {
  const gone = await poll(
    async () => ((await Promise.all(names.map((n) => c.get(PODS(namespace), n)))).every((p) => p === undefined) ? true : undefined),
    timeoutMs,
  );
  if (gone === undefined)
    throw new OlmError(`registry pod(s) ${names.join(', ')} in namespace ${namespace} were not gone within ${timeoutMs / 1000}s`);
}

/** Creates the ConfigMap and the registry pod; resolves with `<pod IP>:50051` once the pod is Ready. */
export async function startRegistryPod(c: Cluster, r: RegistryPod, timeoutMs: number, log: (line: string) => void): Promise<string> {
  if (Buffer.byteLength(r.catalog) > MAX_CATALOG_BYTES) {
    throw new OlmError(
      `the catalog of ${r.packageName} is ${Buffer.byteLength(r.catalog)} bytes: more than a ConfigMap holds (${MAX_CATALOG_BYTES}); its CRDs are too large for run bundle's registry pod`,
    );
  }
  const { configMap, pod } = registryObjects(r);
  if (await c.delete(PODS(r.namespace), r.name)) await podsGone(c, r.namespace, [r.name], timeoutMs);
  await c.apply(configMap);
  await c.apply(pod);
  log(`created registry pod ${r.namespace}/${r.name} (${r.opmImage}, opm serve); waiting for it to be Ready`);
  let last: Obj | undefined;
  const ip = await poll(async () => {
    last = await c.get(PODS(r.namespace), r.name);
    const stuck = last === undefined ? undefined : podStuck(last);
    if (stuck !== undefined)
      throw new OlmError(
        `the registry ${stuck}${/Pull/.test(stuck) ? `; is ${r.opmImage} in a registry the nodes reach? (--index-image; hack/olm-images.sh push builds it for the real node)` : ''}`,
      );
    return podReady(last) ? (last?.status?.podIP as string | undefined) : undefined;
  }, timeoutMs);
  if (ip === undefined)
    throw new OlmError(
      `registry pod ${r.namespace}/${r.name} was not Ready within ${timeoutMs / 1000}s (phase ${last?.status?.phase ?? 'unknown'}): kubectl -n ${r.namespace} describe pod ${r.name}`,
    );
  return `${ip}:${REGISTRY_PORT}`;
}

/** The registry pod and ConfigMap, owned by the CatalogSource (applied again with the owner reference). */
export async function ownByCatalogSource(c: Cluster, r: RegistryPod, catalogSource: Obj): Promise<void> {
  const owner = {
    apiVersion: catalogSource.apiVersion ?? '',
    kind: catalogSource.kind ?? '',
    name: catalogSource.metadata?.name ?? '',
    uid: catalogSource.metadata?.uid ?? '',
    blockOwnerDeletion: false,
  };
  const { configMap, pod } = registryObjects(r);
  for (const o of [configMap, pod]) {
    if (o.metadata !== undefined) o.metadata.ownerReferences = [owner];
    await c.apply(o);
  }
}

/**
 * The registry pod labelled `selector` whose address the CatalogSource names (`address`): its name,
 * its image, and the catalog it serves, read back from its ConfigMap. The cluster, not this machine,
 * holds what `run bundle` served, so `run bundle-upgrade` works from any machine.
 */
export async function servingRegistryPod(
  c: Cluster,
  at: { namespace: string; selector: string; address: string },
): Promise<{ name: string; opmImage: string; catalog: string } | undefined> {
  const pods = await c.list(PODS(at.namespace), at.selector);
  const pod = pods.find((p) => `${String(p.status?.podIP)}:${REGISTRY_PORT}` === at.address);
  const name = pod?.metadata?.name;
  if (name === undefined) return undefined;
  const catalog = ((await c.get(CONFIGMAPS(at.namespace), name)) as { data?: Record<string, string> } | undefined)?.data?.['catalog.yaml'];
  const image = (pod?.spec as { containers?: { image?: string }[] } | undefined)?.containers?.[0]?.image;
  return catalog === undefined || image === undefined ? undefined : { name, opmImage: image, catalog };
}

/**
 * Deletes the registry pods and ConfigMaps labelled `selector` in the namespace (but `except`, the
 * one now serving) and waits until the pods are gone.
 */
export async function deleteRegistryPods(
  c: Cluster,
  at: { namespace: string; selector: string; timeoutMs: number; except?: string },
  log: (line: string) => void,
): Promise<void> {
  const { namespace, selector, timeoutMs } = at;
  const other = (o: Obj): boolean => o.metadata?.name !== at.except;
  const pods = (await c.list(PODS(namespace), selector)).filter(other);
  for (const cm of (await c.list(CONFIGMAPS(namespace), selector)).filter(other))
    await c.delete(CONFIGMAPS(namespace), cm.metadata?.name ?? '');
  for (const p of pods) if (await c.delete(PODS(namespace), p.metadata?.name ?? '')) log(`registry pod ${p.metadata?.name ?? ''} deleted`);
  await podsGone(
    c,
    namespace,
    pods.map((p) => p.metadata?.name ?? ''),
    timeoutMs,
  );
}
