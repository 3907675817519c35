import pc from 'picocolors';
import type { BlastRadius } from '../protocol/index.js';
import { RADIUS_PALETTE } from '../protocol/index.js';

/** Colour helpers that do nothing when colour is off. */
export interface Style {
  radius(radius: BlastRadius, text?: string): string;
  dim(text: string): string;
  bold(text: string): string;
  red(text: string): string;
  yellow(text: string): string;
  green(text: string): string;
}

/** A {@link Style} for a terminal that does or does not want colour. */
export function createStyle(color: boolean): Style {
  const c = pc.createColors(color);
  return {
    // The palette's terminal colour, so tables colour radii the way the dashboard does.
    radius: (radius, text = radius) =>
      color ? `\x1b[38;5;${RADIUS_PALETTE[radius].ansi}m${text}\x1b[39m` : text,
    dim: c.dim,
    bold: c.bold,
    red: c.red,
    yellow: c.yellow,
    green: c.green,
  };
}

/** How long ago `at` was, in its largest whole unit: `42s`, `5m`, `3h`, `2d`. */
export function age(at: number, now: number): string {
  const s = Math.max(0, Math.floor((now - at) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  return s < 86_400 ? `${Math.floor(s / 3600)}h` : `${Math.floor(s / 86_400)}d`;
}

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;

/** Visible width of a string that may hold ANSI colour codes. */
export function visibleWidth(text: string): number {
  return text.replace(ANSI, '').length;
}

/** Renders rows as an aligned table with a header row; cells may be coloured. */
export function renderTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  const widths = header.map((h, i) =>
    Math.max(visibleWidth(h), ...rows.map((r) => visibleWidth(r[i] ?? ''))),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => cell + ' '.repeat(Math.max(0, (widths[i] ?? 0) - visibleWidth(cell))))
      .join('  ')
      .trimEnd();
  return (
    [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n') + '\n'
  );
}

/**
 * The fleet table, one row per skill (`agent`, `status`, `card age`, `skill`, `radius`, `mode`,
 * `floor`, `awaiting ack`), and under it each agent whose last card fetch failed, with the error.
 */
export function renderFleetTable(
  rows: readonly (readonly string[])[],
  failures: readonly { name: string; message: string }[],
  s: Style,
): string {
  const table = renderTable(
    ['agent', 'status', 'card age', 'skill', 'radius', 'mode', 'floor', 'awaiting ack'],
    rows,
  );
  if (failures.length === 0) return table;
  return `${table}\n${failures.map((f) => `${s.red('!')} ${f.name}: ${f.message}`).join('\n')}\n`;
}
