/** A property name as a path segment: `.name` when it reads as an identifier, `["odd name"]` otherwise. */
export const fieldPath = (name: string): string => (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`);
