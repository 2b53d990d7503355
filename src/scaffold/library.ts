/** The real conversions behind {@link ScaffoldLibrary}: the schema, sample and RBAC modules. */
import { openSpecSchema, specSchemaFromValues, specSchemaFromValuesSchema, statusSchema } from './crd-schema.js';
import type { ScaffoldLibrary } from './ports.js';
import { builtinResourceInfo, rulesForObjects } from './rbac.js';
import { sampleCustomResource } from './sample.js';

export const scaffoldLibrary: ScaffoldLibrary = {
  specSchemaFromValuesSchema,
  specSchemaFromValues,
  openSpecSchema,
  statusSchema,
  sampleCustomResource,
  rulesForObjects,
  builtinResourceInfo,
};
