/**
 * zod, loaded the first time a schema is needed. The protocol validates on fast paths written by
 * hand (proven equal to the schemas by property tests); the schemas only word the reason of a
 * rejection. Loading zod up front would cost every importer of the library more than the A2A SDK
 * client itself, for an error path.
 */
import { createRequire } from 'node:module';
import type { z as Zod } from 'zod';

let loaded: typeof Zod | undefined;

/** The zod namespace, loaded on first use. */
export function zod(): typeof Zod {
  loaded ??= (createRequire(import.meta.url)('zod') as { z: typeof Zod }).z;
  return loaded;
}

/** A value built with zod on first use, then kept. */
export function lazySchema<T>(build: (z: typeof Zod) => T): () => T {
  let schema: T | undefined;
  return () => (schema ??= build(zod()));
}
