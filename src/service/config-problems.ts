/**
 * Problems of a configuration in words a person understands, each with its path and, for a file,
 * its line and column: `fleetgate.yaml:3:1 lisen: unknown key; did you mean "listen"?`.
 */
import type { Document, LineCounter } from 'yaml';
import { isMap, isPair, isScalar, isSeq } from 'yaml';
import type { z } from 'zod';
import { redactStoreUrl } from '../store/index.js';
import { didYouMean } from './did-you-mean.js';

/** One problem of a configuration. */
export interface ConfigProblem {
  /** Where in the configuration: `['agents', 2, 'url']`; empty for the file as a whole. */
  path: (string | number)[];
  message: string;
  /** 1-based line and column in the file, when the configuration came from one. */
  line?: number;
  column?: number;
}

/** `agents[2].url`, `policy.unknownRadius`; empty for the root. */
export function pathText(path: readonly (string | number)[]): string {
  return path.reduce<string>(
    (acc, key) => (typeof key === 'number' ? `${acc}[${key}]` : acc === '' ? key : `${acc}.${key}`),
    '',
  );
}

/** `file:line:col path: message` (without what is unknown). */
export function formatProblem(source: string, problem: ConfigProblem): string {
  const at =
    problem.line === undefined ? source : `${source}:${problem.line}:${problem.column ?? 1}`;
  const path = pathText(problem.path);
  return `${at} ${path === '' ? '' : `${path}: `}${problem.message}`;
}

/** The part of a zod schema definition the walker reads. */
interface SchemaDef {
  type: string;
  shape?: Record<string, { def: SchemaDef }>;
  innerType?: { def: SchemaDef };
  in?: { def: SchemaDef };
  element?: { def: SchemaDef };
  valueType?: { def: SchemaDef };
}

/** The definition past defaults, optionals and transforms. */
function unwrap(def: SchemaDef): SchemaDef {
  let current = def;
  for (let i = 0; i < 16; i += 1) {
    const next = current.innerType?.def ?? (current.type === 'pipe' ? current.in?.def : undefined);
    if (next === undefined) break;
    current = next;
  }
  return current;
}

/** The keys an object schema allows at `path`, or none when `path` does not lead to one. */
export function knownKeys(schema: z.ZodType, path: readonly (string | number)[]): string[] {
  let def: SchemaDef | undefined = unwrap((schema as unknown as { def: SchemaDef }).def);
  for (const key of path) {
    if (def === undefined) return [];
    if (def.type === 'object') def = def.shape?.[String(key)]?.def;
    else if (def.type === 'array') def = def.element?.def;
    else if (def.type === 'record') def = def.valueType?.def;
    else return [];
    def = def === undefined ? undefined : unwrap(def);
  }
  return def?.type === 'object' ? Object.keys(def.shape ?? {}) : [];
}

/**
 * A short rendering of what the file holds at a path, for `(got …)`; the password of a URL is
 * never shown (`postgres://user:***@host`).
 */
export function shown(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'a mapping';
  const text =
    JSON.stringify(typeof value === 'string' ? redactStoreUrl(value) : value) ?? typeof value;
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}

/** The value at `path` in `root`, undefined when a step is missing. */
export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let current = root;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

const TYPE_WORDS: Readonly<Record<string, string>> = {
  object: 'a mapping of keys',
  array: 'a list',
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
};

/**
 * Turns one zod issue into problems (an unknown-keys issue names several keys), worded for a
 * person: what is wrong, what is allowed, what was found.
 */
export function issueProblems(
  issue: z.core.$ZodIssue,
  schema: z.ZodType,
  input: unknown,
  base: readonly (string | number)[] = [],
): ConfigProblem[] {
  const path = [...base, ...(issue.path as (string | number)[])];
  const got = valueAt(input, issue.path);
  switch (issue.code) {
    case 'unrecognized_keys': {
      const known = knownKeys(schema, issue.path as (string | number)[]);
      return issue.keys.map((key) => {
        const guess = didYouMean(key, known);
        const hint =
          guess !== undefined
            ? `; did you mean "${guess}"?`
            : known.length > 0
              ? ` (allowed: ${known.join(', ')})`
              : '';
        return { path: [...path, key], message: `unknown key${hint}` };
      });
    }
    case 'invalid_type':
      return [
        {
          path,
          message:
            got === undefined
              ? 'is required'
              : `must be ${TYPE_WORDS[issue.expected] ?? issue.expected} (got ${shown(got)})`,
        },
      ];
    case 'invalid_value':
      return [
        {
          path,
          message: `must be ${issue.values.length === 1 ? '' : 'one of '}${issue.values
            .map((v) => String(v))
            .join(', ')} (got ${shown(got)})`,
        },
      ];
    case 'too_small':
    case 'too_big': {
      const bound = Number(issue.code === 'too_small' ? issue.minimum : issue.maximum);
      const word = issue.code === 'too_small' ? 'at least' : 'at most';
      const message =
        issue.origin === 'string'
          ? bound === 1 && issue.code === 'too_small'
            ? 'must not be empty'
            : `must be ${word} ${bound} characters long`
          : issue.origin === 'array'
            ? `must have ${word} ${bound} entr${bound === 1 ? 'y' : 'ies'}`
            : `must be ${word} ${bound} (got ${shown(got)})`;
      return [{ path, message }];
    }
    default: {
      // A key's own words ("must be memory or nats://host:port"), then what the file holds,
      // unless the words name the part at fault already (`(got …)`, or a custom issue's
      // `params.named`: a URL's query option, named without the rest of the URL).
      const primitive = got !== undefined && (typeof got !== 'object' || got === null);
      const named =
        issue.message.includes('(got ') ||
        (issue.code === 'custom' &&
          (issue.params as { named?: unknown } | undefined)?.named === true);
      const message = primitive && !named ? `${issue.message} (got ${shown(got)})` : issue.message;
      return [{ path, message }];
    }
  }
}

/** Line and column of an offset. */
function at(counter: LineCounter, offset: number): { line: number; column: number } {
  const pos = counter.linePos(offset);
  return { line: pos.line, column: pos.col };
}

/**
 * Where a problem is in the file: the key itself for an unknown key, else the value, else the
 * nearest mapping or list the path still reaches (a missing key points at its parent).
 */
export function locate(doc: Document, counter: LineCounter, problem: ConfigProblem): ConfigProblem {
  const unknownKey = problem.message.startsWith('unknown key');
  let node: unknown = doc.contents;
  let offset: number | undefined = (node as { range?: [number] } | null)?.range?.[0];
  for (const [i, key] of problem.path.entries()) {
    let next: unknown;
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(key));
      if (pair === undefined) break;
      const last = i === problem.path.length - 1;
      const keyRange = (pair.key as { range?: [number] } | null)?.range;
      if (last && unknownKey && keyRange !== undefined) {
        offset = keyRange[0];
        break;
      }
      next = pair.value;
      offset = (next as { range?: [number] } | null)?.range?.[0] ?? keyRange?.[0] ?? offset;
    } else if (isSeq(node) && typeof key === 'number') {
      next = node.items[key];
      if (next === undefined) break;
      offset = (next as { range?: [number] }).range?.[0] ?? offset;
    } else break;
    node = next;
  }
  return offset === undefined ? problem : { ...problem, ...at(counter, offset) };
}

/** Keys written twice in one mapping (the YAML parser keeps the last silently when allowed to). */
export function duplicateKeys(doc: Document, counter: LineCounter): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const visit = (node: unknown, path: (string | number)[]): void => {
    if (isMap(node)) {
      const seen = new Map<string, number>();
      for (const pair of node.items) {
        if (!isPair(pair) || !isScalar(pair.key)) continue;
        const key = String(pair.key.value);
        const start = pair.key.range?.[0] ?? 0;
        const first = seen.get(key);
        if (first !== undefined) {
          problems.push({
            path: [...path, key],
            message: `duplicate key (first written at line ${at(counter, first).line})`,
            ...at(counter, start),
          });
        } else seen.set(key, start);
        visit(pair.value, [...path, key]);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => visit(item, [...path, i]));
    }
  };
  visit(doc.contents, []);
  return problems;
}
