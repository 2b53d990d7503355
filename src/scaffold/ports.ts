/**
 * The pure conversions `create api` needs (schema → CRD, values.yaml → sample, rendered kinds →
 * RBAC rules), as a port: the generator takes them as an argument, so it is testable with small
 * fakes; src/scaffold/library.ts binds the real modules. The data types are theirs.
 */
import type { OpenApiSchema, SchemaConversion, ValuesSchemaOptions } from './crd-schema.js';
import type { PolicyRule, RbacResult, RenderedObject, ResourceInfo } from './rbac.js';
import type { SampleOptions, SampleTarget } from './sample.js';

export type { OpenApiSchema, PolicyRule, RenderedObject, ResourceInfo, SchemaConversion };

export interface ScaffoldLibrary {
  /** `options.values`: the chart's parsed values.yaml, which helm merges under the spec (so what it sets is not required of a CR). */
  specSchemaFromValuesSchema(valuesSchema: unknown, options?: ValuesSchemaOptions): SchemaConversion;
  specSchemaFromValues(values: unknown): SchemaConversion;
  openSpecSchema(): OpenApiSchema;
  statusSchema(): OpenApiSchema;
  sampleCustomResource(valuesYaml: string, target: SampleTarget, options?: SampleOptions): string;
  rulesForObjects(objects: readonly RenderedObject[], resolve: (apiVersion: string, kind: string) => ResourceInfo | undefined): RbacResult;
  builtinResourceInfo(apiVersion: string, kind: string): ResourceInfo | undefined;
}
