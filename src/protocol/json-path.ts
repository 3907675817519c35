const IDENTIFIER = /^[A-Za-z_$][\w$-]*$/;

/**
 * Appends a key to a JSON path in the dotted notation used by every diagnostic:
 * `skills.deploy`, `skills["a.b"]`, `extensions[2]`.
 */
export function jsonPath(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  const step = IDENTIFIER.test(key) ? key : JSON.stringify(key);
  if (step.startsWith('"')) return `${base}[${step}]`;
  return base === '' ? step : `${base}.${step}`;
}

/** A plain JSON object (not an array, not null). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A short JSON rendering of a value for messages, cut at `max` characters. */
export function preview(value: unknown, max = 60): string {
  let text: string;
  try {
    text = value === undefined ? 'undefined' : (JSON.stringify(value) ?? typeof value);
  } catch {
    text = `[${typeof value}]`;
  }
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
