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
