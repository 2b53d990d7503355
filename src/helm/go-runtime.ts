/** A helm process's Go heap limit (see goRuntimeEnv): above the sample chart's ~64 MiB, well below the pod's limit. */
export const HELM_MEMORY_LIMIT = '128MiB';

/**
 * Go's garbage collector in helm's processes, unless the operator's environment sets GOGC or
 * GOMEMLIMIT itself. A helm process lives for one operation and allocates a few tens of MiB:
 * collecting along the way spends CPU on memory that exit frees anyway. GOGC=off with a memory
 * limit collects only as a process nears the limit, so a very large chart still runs in bounded
 * memory. Measured on the sample chart: ~18 % less helm CPU, converge ~8 % faster (ADR 0025).
 */
export function goRuntimeEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  if (env.GOGC !== undefined || env.GOMEMLIMIT !== undefined) return {};
  return { GOGC: 'off', GOMEMLIMIT: HELM_MEMORY_LIMIT };
}
