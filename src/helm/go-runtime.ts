/**
 * Go's scheduler in helm's processes: one P (`GOMAXPROCS=1`), unless the operator's environment
 * sets GOMAXPROCS itself. The operator runs helm processes side by side, so its parallelism comes
 * from processes; inside one, a second P only spins looking for work while helm waits on the API
 * server, and that spinning is CPU the pod's limit charges. Go (≥ 1.25) derives GOMAXPROCS from a
 * cgroup's CPU limit but never below 2, so under a 1-CPU limit helm would still run two.
 *
 * Go's collector is left at its default (ADR 0067, which replaces ADR 0025's `GOGC=off`): a
 * process that never collects touches fresh pages instead, and on a machine where a page fault is
 * dear that costs more than the collection it saves. Measured: ADR 0067.
 */
export function goRuntimeEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  return env.GOMAXPROCS === undefined ? { GOMAXPROCS: '1' } : {};
}
