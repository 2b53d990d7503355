/**
 * The charts of the waved-rollout tests (test/integration/operator/rollout.test.ts, and sharded in
 * production/sharded-rollout.test.ts): one Deployment per release, in versions that roll out,
 * never become ready, or fail a hook.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** post-rollback hooks of v1: they keep an undo's rollback pending for a while after its Deployment update. */
const ROLLBACK_HOOKS = 20;
export type Version = 'v1' | 'v2-unready' | 'v2-hook' | 'v3';
export const CHART_VERSION: Record<Version, string> = { v1: '0.1.0', 'v2-unready': '0.2.0', 'v2-hook': '0.2.0', v3: '0.3.0' };

/** One Deployment; v2-unready pins it to a node that does not exist, v2-hook adds a pre-upgrade hook the API server refuses. */
export async function writeChart(dir: string, v: Version): Promise<string> {
  const root = path.join(dir, v);
  await mkdir(path.join(root, 'templates'), { recursive: true });
  await writeFile(path.join(root, 'Chart.yaml'), `apiVersion: v2\nname: fleet\nversion: ${CHART_VERSION[v]}\n`);
  const pin = v === 'v2-unready' ? '      nodeSelector:\n        rollout.example.com/no-such-node: "true"\n' : '';
  await writeFile(
    path.join(root, 'templates', 'deployment.yaml'),
    `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n  labels: { chart: "${CHART_VERSION[v]}" }\nspec:\n  replicas: 1\n  selector: { matchLabels: { app: {{ .Release.Name }} } }\n  template:\n    metadata: { labels: { app: {{ .Release.Name }} } }\n    spec:\n${pin}      containers:\n        - { name: app, image: "busybox:1.36", command: [sleep, infinity] }\n`,
  );
  if (v === 'v1') {
    // What `rollout undo` goes back to: helm creates these after it has updated the Deployment and
    // before it marks the rollback deployed, so the reconcile that Deployment update wakes meets the
    // release pending-rollback (the operator must not take that for an abandoned operation).
    const hooks = Array.from(
      { length: ROLLBACK_HOOKS },
      (_, i) =>
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-rolled-back-${i}\n  annotations: { helm.sh/hook: post-rollback, helm.sh/hook-delete-policy: before-hook-creation }\n`,
    );
    await writeFile(path.join(root, 'templates', 'post-rollback.yaml'), hooks.join('---\n'));
  }
  if (v === 'v2-hook') {
    await writeFile(
      path.join(root, 'templates', 'hook.yaml'),
      'apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-migrate\n  annotations: { helm.sh/hook: pre-upgrade }\nspec:\n  backoffLimit: -1\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{ name: m, image: "busybox:1.36" }]\n',
    );
  }
  return root;
}
