/**
 * A small JSON Schema (2020-12 subset, as OpenAPI 3.1 uses) validator for the OpenAPI test:
 * $ref within the document, type, enum, const, properties, required, additionalProperties,
 * items, oneOf, minimum, maximum, minLength, maxLength, pattern, maxItems. Unknown keywords
 * (format, description, default) are ignored. Returns every violation with its JSON path.
 */

export type Schema = { readonly [key: string]: unknown };

export function validate(
  schema: Schema,
  value: unknown,
  document: Schema,
  path = "$",
  depth = 0,
): string[] {
  if (depth > 64) return [`${path}: schema nesting too deep`];
  if (typeof schema.$ref === "string") {
    return validate(resolve(document, schema.$ref), value, document, path, depth + 1);
  }
  const errors: string[] = [];
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type as string[] : [schema.type as string];
    if (!types.some((t) => hasType(value, t))) {
      return [`${path}: expected ${types.join("|")}, got ${JSON.stringify(value)?.slice(0, 80)}`];
    }
  }
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) {
    errors.push(`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  }
  if ("const" in schema && schema.const !== value) {
    errors.push(`${path}: expected ${JSON.stringify(schema.const)}`);
  }
  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum) {
      errors.push(`${path}: ${value} < minimum ${schema.minimum}`);
    }
    if (typeof schema.maximum === "number" && value > schema.maximum) {
      errors.push(`${path}: ${value} > maximum ${schema.maximum}`);
    }
  }
  if (typeof value === "string") {
    if (typeof schema.minLength === "number" && value.length < schema.minLength) {
      errors.push(`${path}: shorter than ${schema.minLength}`);
    }
    if (typeof schema.maxLength === "number" && value.length > schema.maxLength) {
      errors.push(`${path}: longer than ${schema.maxLength}`);
    }
    if (typeof schema.pattern === "string" && !new RegExp(schema.pattern, "u").test(value)) {
      errors.push(`${path}: does not match ${schema.pattern}`);
    }
  }
  if (Array.isArray(value)) {
    if (typeof schema.maxItems === "number" && value.length > schema.maxItems) {
      errors.push(`${path}: more than ${schema.maxItems} items`);
    }
    if (schema.items !== undefined) {
      value.forEach((item, i) => {
        errors.push(
          ...validate(schema.items as Schema, item, document, `${path}[${i}]`, depth + 1),
        );
      });
    }
  }
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const object = value as Record<string, unknown>;
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    for (const name of (schema.required ?? []) as string[]) {
      if (!Object.hasOwn(object, name)) errors.push(`${path}: missing required ${name}`);
    }
    for (const [name, item] of Object.entries(object)) {
      const itemPath = `${path}.${name}`;
      if (Object.hasOwn(properties, name)) {
        errors.push(...validate(properties[name]!, item, document, itemPath, depth + 1));
      } else if (schema.additionalProperties === false) {
        errors.push(`${itemPath}: not in the schema`);
      } else if (typeof schema.additionalProperties === "object") {
        errors.push(
          ...validate(schema.additionalProperties as Schema, item, document, itemPath, depth + 1),
        );
      }
    }
  }
  if (Array.isArray(schema.oneOf)) {
    const passing = (schema.oneOf as Schema[]).filter((s) =>
      validate(s, value, document, path, depth + 1).length === 0
    );
    if (passing.length !== 1) {
      errors.push(`${path}: matches ${passing.length} of oneOf's schemas, not exactly 1`);
    }
  }
  return errors;
}

export function resolve(document: Schema, ref: string): Schema {
  if (!ref.startsWith("#/")) throw new Error(`only local $refs are supported: ${ref}`);
  let node: unknown = document;
  for (const part of ref.slice(2).split("/")) {
    node = (node as Record<string, unknown> | undefined)?.[part];
  }
  if (typeof node !== "object" || node === null) throw new Error(`unresolved $ref ${ref}`);
  return node as Schema;
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case "null":
      return value === null;
    case "boolean":
      return typeof value === "boolean";
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "array":
      return Array.isArray(value);
    case "object":
      return typeof value === "object" && value !== null && !Array.isArray(value);
    default:
      throw new Error(`unknown schema type ${type}`);
  }
}
