import pc from 'picocolors';
import type { BlastRadius } from '../protocol/index.js';

/**
 * Radius colours, shared by every table the CLI prints (and mirrored by the dashboard):
 * self grey, project blue, repo yellow, fleet orange, public red.
 */
export const RADIUS_COLORS: Readonly<Record<BlastRadius, string>> = {
  self: '#8a8f98',
  project: '#3b82f6',
  repo: '#eab308',
  fleet: '#f97316',
  public: '#ef4444',
};

/** Colour helpers that do nothing when colour is off. */
export interface Style {
  radius(radius: BlastRadius, text?: string): string;
  dim(text: string): string;
  bold(text: string): string;
  red(text: string): string;
  yellow(text: string): string;
  green(text: string): string;
}

function hexToAnsi256(hex: string): number {
  const n = Number.parseInt(hex.slice(1), 16);
  const [r, g, b] = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((c) =>
    Math.round((c / 255) * 5),
  );
  return 16 + 36 * (r ?? 0) + 6 * (g ?? 0) + (b ?? 0);
}

/** A {@link Style} for a terminal that does or does not want colour. */
export function createStyle(color: boolean): Style {
  const c = pc.createColors(color);
  return {
    radius: (radius, text = radius) =>
      color ? `\x1b[38;5;${hexToAnsi256(RADIUS_COLORS[radius])}m${text}\x1b[39m` : text,
    dim: c.dim,
    bold: c.bold,
    red: c.red,
    yellow: c.yellow,
    green: c.green,
  };
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
