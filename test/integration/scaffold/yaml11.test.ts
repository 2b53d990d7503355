import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { ApiextensionsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readHelmYaml } from '../../../src/config/helm-yaml.js';
import { ChartHelm } from '../../../src/helm/chart-helm.js';
import { createApi } from '../../../src/scaffold/create-api.js';
import { scaffoldLibrary } from '../../../src/scaffold/library.js';
import { createNamespace, testKubeConfig, uniqueName, waitFor } from '../../support/kube.js';
import { fixtureChart } from '../../support/operator.js';
import { initFilesOnly } from '../../support/scaffold.js';

const run = promisify(execFile);

/**
 * The typed CRD and the sample `create api` derives from a values.yaml that spells its values the
 * YAML 1.1 way (`fileMode: 0400`, `readOnly: yes`, `debug: off`, `mask: 0x1F`): both must type them
 * as helm reads them. Applied with kubectl (a YAML 1.1 reader, like helm), the sample is accepted by
 * the CRD and stores exactly helm's values; read as YAML 1.2 the CRD would demand a string for
 * `readOnly` and the sample would carry 400 for the mode.
 */
describe('create api from a values.yaml with YAML 1.1 scalars', () => {
  const kc = testKubeConfig();
  const prefix = uniqueName('yaml11');
  const group = `${prefix}.example.com`;
  let root: string;
  let files: Map<string, string>;
  let ns: { name: string; remove: () => Promise<void> } | undefined;
  const kubectl = async (...args: string[]): Promise<string> =>
    (await run(inject('kubectlBin'), ['--kubeconfig', inject('kubeconfigPath'), ...args], { timeout: 60_000 })).stdout;

  beforeAll(async () => {
    root = await initFilesOnly('yaml11');
    const helm = new ChartHelm({ binary: inject('helmBin'), tmpDir: root });
    const result = await createApi(
      { root, group: prefix, version: 'v1', kind: 'Reader', helmChart: fixtureChart('yaml11'), dryRun: true },
      { helm, library: scaffoldLibrary },
    );
    files = new Map(result.plan.flatMap((op) => (op.op === 'create' && typeof op.body === 'string' ? [[op.path, op.body] as const] : [])));
    ns = await createNamespace(kc, 'yaml11-scaffold');
  });
  afterAll(async () => {
    await ns?.remove();
    await kc
      .makeApiClient(ApiextensionsV1Api)
      .deleteCustomResourceDefinition({ name: `readers.${group}` })
      .catch(() => undefined);
    await rm(root, { recursive: true, force: true });
  });

  const file = (prefix: string): string => {
    const hit = [...files].find(([p]) => p.startsWith(prefix));
    if (hit === undefined) throw new Error(`no ${prefix}* in the plan: ${[...files.keys()].join(', ')}`);
    return hit[1];
  };

  it('types the CRD fields as helm reads the values', () => {
    const crd = readHelmYaml(file('config/crd/bases/')) as {
      spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, { type: string }> } } } } }[] };
    };
    const props = crd.spec.versions[0]?.schema.openAPIV3Schema.properties.spec.properties ?? {};
    expect({ fileMode: props.fileMode?.type, readOnly: props.readOnly?.type, debug: props.debug?.type, mask: props.mask?.type }).toEqual({
      fileMode: 'integer',
      readOnly: 'boolean',
      debug: 'boolean',
      mask: 'integer',
    });
  });

  it('the sample, applied with kubectl, is accepted by the CRD and stores helm values', async () => {
    await writeFile(path.join(root, 'crd.yaml'), file('config/crd/bases/'));
    await writeFile(path.join(root, 'sample.yaml'), file('config/samples/'));
    await kubectl('apply', '-f', path.join(root, 'crd.yaml'));
    await waitFor(
      'the CRD to be established',
      async () =>
        (await kubectl('get', 'crd', `readers.${group}`, '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}')) ===
        'True',
    );
    if (ns === undefined) throw new Error('no namespace: beforeAll failed');
    const namespace = ns.name;
    await kubectl('apply', '-n', namespace, '-f', path.join(root, 'sample.yaml'));
    const custom = kc.makeApiClient(CustomObjectsApi);
    const list = (await custom.listNamespacedCustomObject({ group, version: 'v1', namespace, plural: 'readers' })) as {
      items: { spec: unknown }[];
    };
    expect(list.items[0]?.spec).toEqual({
      image: 'nginx:1.27.3',
      replicas: 1,
      spelling: 'yaml11',
      fileMode: 256,
      readOnly: true,
      debug: false,
      mask: 31,
    });
  });
});
