// The building blocks every section's schema is written with.
import { Type, type TSchema } from '@sinclair/typebox';

/** A string enum that ajv reports as one `enum` error (TypeBox unions of literals report one per arm). */
export function Enum<const T extends readonly string[]>(
  values: T,
  options: { default?: T[number]; description: string },
) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

export function Section<T extends Record<string, TSchema>>(properties: T, description: string) {
  return Type.Object(properties, { additionalProperties: false, default: {}, description });
}
