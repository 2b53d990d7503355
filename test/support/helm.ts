import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { HelmError } from '../../src/helm/index.js';

/** The HelmError a promise rejects with; fails the test when it resolves or rejects otherwise. */
export async function helmRejection(p: Promise<unknown>): Promise<HelmError> {
  const err: unknown = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof HelmError)) throw new Error(`expected a HelmError, got ${String(err)}`);
  return err;
}

/**
 * Runs the real helm (v4) against the test cluster as an administrator does by hand, outside the
 * operator; returns its stdout.
 */
export async function helmByHand(...args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(inject('helmBin'), [...args, '--kubeconfig', inject('kubeconfigPath')], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

/** A release as `helm status -o json` and `helm get values -o json` show it; undefined when there is none. */
export async function releaseByHand(
  release: string,
  namespace: string,
): Promise<{ revision: number; status: string; values: Record<string, unknown> } | undefined> {
  const status = await helmByHand('status', release, '-n', namespace, '-o', 'json').catch((err: unknown) => {
    if (err instanceof Error && /not found/.test(err.message)) return undefined;
    throw err;
  });
  if (status === undefined) return undefined;
  const { version, info } = JSON.parse(status) as { version: number; info: { status: string } };
  const values = JSON.parse(await helmByHand('get', 'values', release, '-n', namespace, '-o', 'json')) as Record<string, unknown> | null;
  return { revision: version, status: info.status, values: values ?? {} };
}
