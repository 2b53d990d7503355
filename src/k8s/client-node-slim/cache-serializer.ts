/**
 * What client-node's cache.js imports from its serializer (see ../client-node-hooks.ts): it
 * serializes the label and field selectors as 'string', which the generated serializer returns
 * unchanged, like every primitive.
 */
export const ObjectSerializer = {
  serialize(data: unknown, type: string): unknown {
    if (type.toLowerCase() !== 'string') throw new Error(`client-node-slim: serializing ${type} is not supported`);
    return data;
  },
};
