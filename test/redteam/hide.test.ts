/**
 * Issue 32 item 2, its last clause: "status.inventory then hides what was created". A tenant makes
 * helm create an object that the operator's reading of the release manifest would miss, so that
 * no drift repair, readiness check or reader of the CR's status ever sees it. Each test asserts that
 * whatever helm created is in the CR's status.inventory.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { exists } from '../support/kube.js';
import { againstEachConfiguration, attack, CONFIGURATIONS, SCAFFOLDED } from './support/target.js';

againstEachConfiguration(
  'hiding an object from status.inventory',
  (target) => {
    const a = (): string => target.tenancy.a;

    /** Creates CR `name` with `extraDeploy`; expects ConfigMap `object`, if helm created it, listed in the CR's inventory. */
    const expectListed = async (name: string, extraDeploy: string, object: string): Promise<void> => {
      await target.crs().create(a(), name, { extraDeploy: [extraDeploy] });
      const { cr } = await target.settle(name);
      const core = target.tenancy.admin.makeApiClient(CoreV1Api);
      const created = await exists(() => core.readNamespacedConfigMap({ namespace: a(), name: object }));
      const listed = (cr.status?.inventory ?? []).some((o) => o.kind === 'ConfigMap' && o.name === object);
      expect(created, `helm did not create ConfigMap ${object}: the attack proves nothing`).toBe(true);
      expect(listed, `ConfigMap ${object}, created by helm, in status.inventory of ${name}`).toBe(true);
    };

    attack(
      target,
      { id: 'v13', title: 'a ConfigMap in a document with 120 YAML aliases, which a reader with a 100-alias limit drops', kind: 'hide' },
      async () => {
        const aliases = Array.from({ length: 120 }, (_, i) => `    a${i}: *v`).join('\n');
        await expectListed(
          'aliased-cm',
          `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hidden-aliased\n  annotations:\n    anchor: &v "x"\n${aliases}\ndata: {x: "1"}`,
          'hidden-aliased',
        );
      },
    );

    attack(
      target,
      { id: 'v14', title: 'a ConfigMap inside the items: of a ConfigMap (a list to helm, whatever its kind)', kind: 'hide' },
      async () => {
        await expectListed(
          'listed-cm',
          'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: carrier}\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: hidden-item}, data: {x: "1"}}',
          'hidden-item',
        );
      },
    );
  },
  [...CONFIGURATIONS, SCAFFOLDED],
);
