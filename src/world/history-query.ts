/** Normalises and evaluates {@link HistoryQuery} the same way in every store. */
import { checkDeltaPath, FleetgateError } from '../protocol/index.js';
import type { AuditRecord, HistoryQuery } from './types.js';

/** Default and largest `limit` of a history query. */
export const HISTORY_LIMITS = { default: 100, max: 10_000 } as const;

/** A history query with every default filled in. */
export interface NormalisedHistoryQuery {
  path: string | undefined;
  since: number | undefined;
  afterSeq: number | undefined;
  limit: number;
  order: 'asc' | 'desc';
  status: HistoryQuery['status'];
}

/**
 * Fills in defaults; `since` given as RFC 3339 becomes epoch ms. A `path` no delta could have
 * (an empty or prototype-reaching segment, too long or too deep) is an error naming why, not a
 * query that quietly matches nothing.
 */
export function normaliseHistoryQuery(query: HistoryQuery): NormalisedHistoryQuery {
  const pathProblem = query.path === undefined ? undefined : checkDeltaPath(query.path);
  if (pathProblem !== undefined) {
    throw new FleetgateError(
      'FLEETGATE_WORLD_QUERY_INVALID',
      `History query: path ${JSON.stringify(query.path)} ${pathProblem} (a path is dot-separated segments, such as data.blockedPRs)`,
      { details: { path: query.path } },
    );
  }
  const since = typeof query.since === 'string' ? Date.parse(query.since) : query.since;
  if (since !== undefined && Number.isNaN(since)) {
    throw new FleetgateError(
      'FLEETGATE_WORLD_QUERY_INVALID',
      `History query: since ${JSON.stringify(query.since)} is not a time (use epoch ms or RFC 3339)`,
      { details: { since: query.since } },
    );
  }
  if (query.limit !== undefined && !(query.limit >= 1)) {
    throw new FleetgateError(
      'FLEETGATE_WORLD_QUERY_INVALID',
      `History query: limit must be at least 1 (got ${query.limit})`,
      { details: { limit: query.limit } },
    );
  }
  const limit = Math.min(
    Math.max(Math.trunc(query.limit ?? HISTORY_LIMITS.default), 1),
    HISTORY_LIMITS.max,
  );
  return {
    path: query.path,
    since,
    afterSeq: query.afterSeq,
    limit,
    order: query.order ?? 'desc',
    status: query.status,
  };
}

/** True when `path` is `prefix` or lies below it. */
export function isAtOrBelow(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}.`);
}

/** True when `record` passes every filter of `query` except domain, order and limit. */
export function matchesHistory(
  record: Pick<AuditRecord, 'path' | 'recordedAt' | 'seq' | 'status'>,
  query: NormalisedHistoryQuery,
): boolean {
  if (query.path !== undefined && !isAtOrBelow(record.path, query.path)) return false;
  if (query.since !== undefined && record.recordedAt < query.since) return false;
  if (query.afterSeq !== undefined && record.seq <= query.afterSeq) return false;
  if (query.status !== undefined && record.status !== query.status) return false;
  return true;
}
