/** Failures the chaos tier found in src/, how they were fixed, and the test that keeps them fixed. */
export interface Finding {
  readonly title: string;
  readonly fix: string;
  readonly regressionTest: string;
}

export const FINDINGS: readonly Finding[] = [];
