/**
 * The radius colours every surface shares (CLI tables, the dashboard), kept as data so both read
 * one table and a radius looks the same wherever it is shown.
 */
import type { BlastRadius } from './radius.js';

/** How one radius is coloured. */
export interface RadiusColors {
  /** Text colour on {@link RadiusColors.bg} (hex); contrast at least 4.5:1 (WCAG AA). */
  readonly fg: string;
  /** Badge / cell background (hex). */
  readonly bg: string;
  /** xterm-256 colour index for the radius as text on a terminal's own background. */
  readonly ansi: number;
}

/**
 * self grey, project blue, repo yellow, fleet orange, public red. Every `fg` on its `bg` meets
 * WCAG AA for normal text (checked by a test), so a badge stays readable.
 */
export const RADIUS_PALETTE: Readonly<Record<BlastRadius, RadiusColors>> = Object.freeze({
  self: Object.freeze({ fg: '#ffffff', bg: '#4b5563', ansi: 145 }),
  project: Object.freeze({ fg: '#ffffff', bg: '#1d4ed8', ansi: 75 }),
  repo: Object.freeze({ fg: '#1f2937', bg: '#facc15', ansi: 220 }),
  fleet: Object.freeze({ fg: '#ffffff', bg: '#c2410c', ansi: 208 }),
  public: Object.freeze({ fg: '#ffffff', bg: '#b91c1c', ansi: 203 }),
});

/** WCAG 2 contrast ratio of two hex colours (`#rrggbb`), from 1 to 21. */
export function contrastRatio(a: string, b: string): number {
  const [hi, lo] = [relativeLuminance(a), relativeLuminance(b)].sort((x, y) => y - x) as [
    number,
    number,
  ];
  return (hi + 0.05) / (lo + 0.05);
}

function relativeLuminance(hex: string): number {
  const n = Number.parseInt(hex.slice(1), 16);
  const [r, g, b] = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
