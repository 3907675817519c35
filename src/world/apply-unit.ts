/**
 * One unit of work of the materialiser: claims the events' ids (so a redelivered event is applied
 * exactly once), loads the domains the fresh ones touch, applies them in order, and writes the
 * changed domains, the audit records and the emissions — all inside the store's transaction.
 */
import type { ApplyReport, ApplySettings, UnitOutput } from './apply-event.js';
import { applyEvent } from './apply-event.js';
import type { JsonObject } from './json.js';
import type { ParsedEvent } from './parse-event.js';
import type { PathCache } from './path-cache.js';
import { initDomain } from './seeds.js';
import type { PathNeed } from './value-rows.js';
import type { StoredDomain, WorldUnitOfWork } from './types.js';

/** What a unit of work takes from its materialiser besides what applying an event does. */
export interface UnitSettings extends ApplySettings {
  /** The configured seeds, checked, by domain name. */
  seeds: ReadonlyMap<string, JsonObject>;
  /** Whether the store loads the paths the entries touch rather than whole domains. */
  loadsByPath: boolean;
}

/** The unit of work of applying events: claims the events, applies the fresh ones, writes. */
export async function applyInUnit(
  uow: WorldUnitOfWork,
  parsed: readonly ParsedEvent[],
  at: number,
  settings: UnitSettings,
): Promise<ApplyReport[]> {
  const fresh = await uow.claim(
    parsed.map((e) => e.envelope.id),
    at,
  );
  const { names, needs } = domainsOf(parsed, fresh, settings.paths, settings.loadsByPath);
  const loaded = await uow.load(names, initDomain(settings.seeds, at), needs);
  const out: UnitOutput = { changed: new Set(), audit: [], emissions: [] };
  const reports: ApplyReport[] = [];
  // An id twice in one batch applies once (the claim returned it once); one event needs no check.
  const seen = parsed.length > 1 ? new Set<string>() : undefined;
  for (const e of parsed) reports.push(applyEvent(e, fresh, seen, loaded, at, out, settings));
  const saved: StoredDomain[] = [];
  for (const name of out.changed) saved.push(loaded.get(name)!.domain);
  await uow.save(saved);
  const unused: string[] = [];
  loaded.forEach((l, name) => {
    if (l.created && !out.changed.has(name)) unused.push(name);
  });
  // Each call is a promise to await: none when there is nothing to remove, record or emit.
  if (unused.length > 0) await uow.discard(unused);
  // Audit rows in the order the entries were reported within each event.
  if (out.audit.length > 0) await uow.audit(out.audit);
  if (out.emissions.length > 0) await uow.emit(out.emissions);
  return reports;
}

/**
 * The domains the fresh events' entries touch, and — for a store that loads by path — the paths
 * and ops of each domain's entries (such a store loads those paths, not whole domains).
 */
function domainsOf(
  parsed: readonly ParsedEvent[],
  fresh: ReadonlySet<string>,
  paths: PathCache,
  loadsByPath: boolean,
): { names: string[]; needs: Map<string, PathNeed[]> | undefined } {
  const needs = loadsByPath ? new Map<string, PathNeed[]>() : undefined;
  const names = new Set<string>();
  for (const e of parsed) {
    if (!fresh.has(e.envelope.id)) continue;
    for (const x of e.entries) {
      names.add(x.domain);
      if (needs === undefined) continue;
      let list = needs.get(x.domain);
      if (list === undefined) needs.set(x.domain, (list = []));
      const segments = paths.segments(x.path);
      if (segments !== undefined) list.push({ segments, op: x.op });
    }
  }
  return { names: [...names], needs };
}
