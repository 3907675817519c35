/**
 * A radius as the CLI shows it: the palette of `src/protocol` (one table for every surface), and
 * always the radius as text next to the colour, so colour is never the only signal.
 */
import { RADIUS_PALETTE } from '../../src/protocol/radius-palette.js';
import type { Radius } from './types.js';

export const RADII: readonly Radius[] = ['self', 'project', 'repo', 'fleet', 'public'];
export const RADIUS_RANK: Record<Radius, number> = {
  self: 0,
  project: 1,
  repo: 2,
  fleet: 3,
  public: 4,
};
/** Unknown radius: the policy's unknown rule applies (default: the widest). */
export const UNKNOWN_COLORS = { fg: '#111827', bg: '#e5e7eb' } as const;

export function radiusRank(r: Radius | null | undefined): number {
  // Unknown sorts with the widest: the policy assumes the worst.
  return r === null || r === undefined ? 5 : RADIUS_RANK[r];
}

export function RadiusBadge(props: { radius: Radius | null; title?: string; label?: string }) {
  const { radius } = props;
  const colors = radius === null ? UNKNOWN_COLORS : RADIUS_PALETTE[radius];
  return (
    <span
      class="radius"
      data-radius={radius ?? 'unknown'}
      style={{ background: colors.bg, color: colors.fg }}
      title={props.title}
    >
      {props.label ?? radius ?? 'unknown'}
    </span>
  );
}

export function Legend() {
  return (
    <div class="legend" aria-label="Radius legend">
      {RADII.map((r) => (
        <RadiusBadge key={r} radius={r} />
      ))}
      <RadiusBadge radius={null} label="unknown → policy" />
    </div>
  );
}
