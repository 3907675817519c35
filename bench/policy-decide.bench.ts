/**
 * policy-decide: what the HITL policy costs.
 *
 * - `decisions_per_s`: pure `decide()` over 10,000 skills with mixed facts (every radius and mode,
 *   unknown and stale cards, floors, pending narrowings, overrides); target ≥ 1,000,000.
 * - `autonomous_added_p99_us`: the p99 the HITL gate adds to an autonomous dispatch: the same
 *   `Dispatcher.dispatch` with `ALLOW_ALL` and with the HITL gate, interleaved call by call
 *   (alternating which goes first) after a warm-up; p99(gate) − p99(allow-all); target ≤ 20.
 *   The fleet client and the records are in memory, so the figure is the gate's own cost, not
 *   the loopback's noise.
 */
import {
  createApprovalInbox,
  createHitlGate,
  decide,
  DEFAULT_POLICY_RULES,
} from '../src/policy/index.js';
import type {
  DecisionInput,
  EffectiveDeclarations,
  HitlFacts,
  RadiusFacts,
} from '../src/policy/index.js';
import type { CallResult, DispatchRecord, DispatchRecordStore } from '../src/dispatch/index.js';
import { ALLOW_ALL, Dispatcher } from '../src/dispatch/index.js';
import type { BlastRadius, HitlMode } from '../src/protocol/index.js';
import { BLAST_RADII, HITL_MODES } from '../src/protocol/index.js';
import { openGatewayStore } from '../src/service/index.js';
import { note, percentile, report } from './report.js';

const BENCH = 'policy-decide';
const SKILLS = 10_000;
const PASSES = 60;
const ROUNDS = 7;
const DISPATCH_PAIRS = 4_000;
const WARMUP_PAIRS = 3_000;

function facts(i: number): DecisionInput {
  const declared: BlastRadius | undefined = i % 11 === 0 ? undefined : BLAST_RADII[i % 5];
  const floor: BlastRadius | undefined = i % 7 === 0 ? BLAST_RADII[(i >> 3) % 5] : undefined;
  const mode: HitlMode | undefined = i % 3 === 0 ? undefined : HITL_MODES[(i >> 2) % 5];
  const radius: RadiusFacts = {
    radius: declared,
    declared,
    accepted: declared,
    pending: i % 13 === 0 ? 'self' : undefined,
    floor,
    stale: i % 17 === 0,
  };
  const hitl: HitlFacts = {
    mode,
    declared: mode,
    pending: undefined,
    vetoTtlMs: i % 5 === 0 ? 30_000 : undefined,
    stale: radius.stale,
  };
  return { agent: `agent-${i % 100}`, skill: `skill-${i}`, radius, hitl };
}

function benchDecide(): void {
  const rules = {
    ...DEFAULT_POLICY_RULES,
    vetoAtOrAbove: 'project' as const,
    notifyAtOrAbove: 'self' as const,
    overrides: [
      { agent: 'agent-1', skill: '*', action: 'allow' as const },
      { agent: '*', skill: 'skill-42', minMode: 'gated' as const },
    ],
  };
  const inputs = Array.from({ length: SKILLS }, (_, i) => facts(i));
  let sink = 0;
  for (let p = 0; p < 5; p++) for (const input of inputs) sink += decide(input, rules).approvers;
  const started = performance.now();
  for (let p = 0; p < PASSES; p++) {
    for (const input of inputs) sink += decide(input, rules).approvers;
  }
  const seconds = (performance.now() - started) / 1000;
  if (sink === 0) note('impossible');
  const perSecond = (PASSES * SKILLS) / seconds;
  report({
    bench: BENCH,
    metric: 'decisions_per_s',
    value: Math.round(perSecond),
    unit: '1/s',
    target: '>=1000000',
  });
}

function memoryRecords(): DispatchRecordStore {
  const rows = new Map<string, DispatchRecord>();
  return {
    create(r) {
      rows.set(r.id, { ...r });
      return Promise.resolve();
    },
    // Events and holders are the store's business; this bench times the gate.
    sending: () => Promise.resolve(),
    orphans: () => Promise.resolve([]),
    adrift: () => Promise.resolve([]),
    held: () => Promise.resolve(undefined),
    takeOver: () => Promise.resolve(false),
    list: () => Promise.resolve([...rows.values()]),
    get: (id) => Promise.resolve(rows.get(id)),
    byTask: () => Promise.resolve(undefined),
    prune: () => Promise.resolve(0),
    update(id, change) {
      const row = rows.get(id);
      if (row !== undefined) {
        row.status = change.status;
        row.updatedAt = change.at;
        if (change.result !== undefined) row.result = change.result;
        if (change.taskId !== undefined) row.taskId = change.taskId;
        // Keep the map small: a finished dispatch is not read again here.
        if (change.status === 'completed') rows.delete(id);
      }
      return Promise.resolve({ changed: row !== undefined, record: row });
    },
  };
}

async function benchAutonomousDispatch(): Promise<void> {
  const store = await openGatewayStore('sqlite::memory:');
  const radius: RadiusFacts = Object.freeze({
    radius: 'self',
    declared: 'self',
    accepted: 'self',
    pending: undefined,
    floor: undefined,
    stale: false,
  });
  const declarations: EffectiveDeclarations = {
    effectiveRadius: () => radius,
    // Like the card broker: a fresh object per call.
    effectiveHitlMode: () => ({
      mode: 'autonomous',
      declared: 'autonomous',
      accepted: 'autonomous',
      pending: undefined,
      vetoTtlMs: undefined,
      stale: false,
    }),
    domains: () => ['board'],
  };
  const gate = createHitlGate({
    declarations,
    inbox: createApprovalInbox({ db: store.db }),
    publish: () => Promise.resolve(),
  });
  const result = {
    ok: true,
    state: 'completed',
    terminal: true,
    text: 'done',
    data: [],
  } as unknown as CallResult;
  const fleet = {
    call: () => Promise.resolve(result),
    agentClient: () => Promise.reject(new Error('no agent client in this bench')),
  };
  const tracker = { follow: () => Promise.resolve() };
  const plain = new Dispatcher({ fleet, records: memoryRecords(), tracker, gate: ALLOW_ALL });
  const gated = new Dispatcher({ fleet, records: memoryRecords(), tracker, gate });
  const request = { agent: 'ops', skill: 'sitrep', text: 'status' };

  const time = async (d: Dispatcher): Promise<number> => {
    const t0 = process.hrtime.bigint();
    const r = await d.dispatch(request);
    const t1 = process.hrtime.bigint();
    if (r.status !== 'completed') throw new Error(`dispatch ended ${r.status}`);
    return Number(t1 - t0) / 1000;
  };
  // Rounds of interleaved pairs; the figure is the median over rounds of p99(gate) − p99(plain),
  // so one GC pause in one round does not decide it.
  const added: number[] = [];
  const addedP50: number[] = [];
  const plainP99: number[] = [];
  const gatedP99: number[] = [];
  for (let round = -1; round < ROUNDS; round++) {
    const plainUs: number[] = [];
    const gatedUs: number[] = [];
    const pairs = round < 0 ? WARMUP_PAIRS : DISPATCH_PAIRS;
    for (let i = 0; i < pairs; i++) {
      const first = Math.random() < 0.5;
      const a = await time(first ? plain : gated);
      const b = await time(first ? gated : plain);
      plainUs.push(first ? a : b);
      gatedUs.push(first ? b : a);
    }
    if (round < 0) continue;
    plainP99.push(percentile(plainUs, 99));
    gatedP99.push(percentile(gatedUs, 99));
    added.push(percentile(gatedUs, 99) - percentile(plainUs, 99));
    addedP50.push(percentile(gatedUs, 50) - percentile(plainUs, 50));
  }
  await store.close();
  note(`p99 added per round (µs): ${added.map((a) => a.toFixed(1)).join(' ')}`);
  report({
    bench: BENCH,
    metric: 'autonomous_added_p99_us',
    value: percentile(added, 50),
    unit: 'us',
    target: '<=20',
  });
  report({
    bench: BENCH,
    metric: 'autonomous_added_p50_us',
    value: percentile(addedP50, 50),
    unit: 'us',
  });
  report({
    bench: BENCH,
    metric: 'allow_all_dispatch_p99_us',
    value: percentile(plainP99, 50),
    unit: 'us',
  });
  report({
    bench: BENCH,
    metric: 'hitl_dispatch_p99_us',
    value: percentile(gatedP99, 50),
    unit: 'us',
  });
}

benchDecide();
await benchAutonomousDispatch();
