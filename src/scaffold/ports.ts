/**
 * The pure conversions `create api` needs (schema → CRD, values.yaml → sample, rendered kinds →
 * RBAC rules), as a port: the generator takes them as an argument, so it is testable with small
 * fakes and does not care which module implements them (src/scaffold/library.ts binds the real ones).
 */

/** A JSON-schema-like object (the CRD's OpenAPI v3 schema of `spec` or `status`). */
export type OpenApiSchemaLike = object;

export interface SchemaConversionLike {
  readonly schema: OpenApiSchemaLike;
  readonly warnings: readonly { readonly path: string; readonly message: string }[];
}

export interface ResourceInfo {
  readonly group: string;
  readonly resource: string;
  readonly namespaced: boolean;
}

export interface PolicyRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
  readonly resourceNames?: readonly string[];
}

/** An object of the rendered chart; `rules` and `roleRef` matter for RBAC objects only. */
export interface RenderedObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly rules?: unknown;
  readonly roleRef?: unknown;
}

export interface ScaffoldLibrary {
  /** `values`: the chart's parsed values.yaml, which helm merges under the spec (so what it sets is not required of a CR). */
  specSchemaFromValuesSchema(valuesSchema: unknown, options?: { readonly values?: unknown }): SchemaConversionLike;
  specSchemaFromValues(values: unknown): SchemaConversionLike;
  openSpecSchema(): OpenApiSchemaLike;
  statusSchema(): OpenApiSchemaLike;
  sampleCustomResource(valuesYaml: string, target: { apiVersion: string; kind: string; name: string }, options?: { header?: string }): string;
  rulesForObjects(
    objects: readonly RenderedObjectRef[],
    resolve: (apiVersion: string, kind: string) => ResourceInfo | undefined,
  ): { rules: readonly PolicyRule[]; unresolved: readonly string[]; notes?: readonly string[] };
  builtinResourceInfo(apiVersion: string, kind: string): ResourceInfo | undefined;
}
