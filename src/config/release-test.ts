/**
 * `test:` of a watches.yaml entry: `helm test` as a gate after each install and upgrade, with
 * Flux helm-controller's names (`enable`, `timeout`, `ignoreFailures`; docs/adr/0081).
 */
import { isMap, type Node } from 'yaml';
import { DurationError, parseDuration } from './duration.js';
import { knownKeys } from './known-keys.js';
import { fail, quote, type EntryContext } from './watches-problems.js';
import { describe, isEmpty, scalarValue } from './yaml-nodes.js';

export interface ReleaseTest {
  /** Run the chart's test hooks after an install or upgrade. */
  readonly enable: boolean;
  /** helm test's `--timeout` (each test hook); undefined: the operator's helm timeout. */
  readonly timeoutMs?: number;
  /**
   * A failed test is reported (Ready=False, TestFailed) but not remediated: the revision stays,
   * the release is not counted failed and a rollout goes on by readiness alone. Default false:
   * it is a failed install or upgrade, undone as one is.
   */
  readonly ignoreFailures: boolean;
}

const KEYS = ['enable', 'timeout', 'ignoreFailures'] as const;
/** A test hook shorter than this cannot start a pod; the bound catches `1ms` meant as `1m`. */
const MIN_TIMEOUT_MS = 1_000;

/** `test:` of one entry; undefined when absent, or wrong (reported), or not enabled. */
export function readReleaseTest(ctx: EntryContext, node: Node | undefined): ReleaseTest | undefined {
  if (isEmpty(node) || node === undefined) return undefined;
  if (!isMap(node)) {
    fail(ctx, node, 'test', `expected a map of ${KEYS.join(', ')}, got ${describe(node)}`);
    return undefined;
  }
  const { fields: values, ok: keysOk } = knownKeys(ctx, node, 'test', KEYS);
  let ok = keysOk;
  const flag = (key: 'enable' | 'ignoreFailures'): boolean => {
    const v = values[key];
    if (isEmpty(v)) return false;
    if (typeof scalarValue(v) === 'boolean') return scalarValue(v) as boolean;
    fail(ctx, v, `test.${key}`, `expected true or false, got ${describe(v)}`);
    ok = false;
    return false;
  };
  const enable = flag('enable');
  const ignoreFailures = flag('ignoreFailures');
  const timeoutMs = readTimeout(ctx, values.timeout);
  if (timeoutMs === null) ok = false;
  if (!ok || !enable) return undefined;
  return { enable, ignoreFailures, ...(timeoutMs === undefined || timeoutMs === null ? {} : { timeoutMs }) };
}

/** undefined: absent; null: wrong (reported). */
function readTimeout(ctx: EntryContext, node: Node | undefined): number | undefined | null {
  if (isEmpty(node)) return undefined;
  const value = scalarValue(node);
  if (typeof value !== 'string') {
    fail(ctx, node, 'test.timeout', `expected a duration string such as "5m", got ${describe(node)}`);
    return null;
  }
  try {
    const ms = parseDuration(value);
    if (ms >= MIN_TIMEOUT_MS) return ms;
    fail(ctx, node, 'test.timeout', `${quote(value)} is shorter than ${MIN_TIMEOUT_MS / 1000}s`);
    return null;
  } catch (err) {
    if (!(err instanceof DurationError)) throw err;
    fail(ctx, node, 'test.timeout', err.message);
    return null;
  }
}
