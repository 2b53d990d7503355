/**
 * Counts fuzzed inputs into the chaos tier's report when a fuzz file runs in that tier (`make
 * test-chaos` includes test/unit/fuzz); in the unit tier it does nothing.
 */
import { inject } from 'vitest';
import { recordFuzz } from '../chaos/support/report.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Set by the chaos tier's global setup. */
    chaosTier: boolean;
  }
}

export function reportFuzz(kind: string, inputs: number): void {
  if ((inject('chaosTier') as boolean | undefined) === true) recordFuzz(kind, inputs);
}
