/**
 * A JSON/YAML map as parsed data holds it: an object that is neither null nor an array. Lives in
 * src/util, which every layer may import and which imports nothing (docs/adr/0048-import-rules.md).
 */
export const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
