/**
 * A task whose reported deltas, as JSON, pass 15 MiB (a gateway's default
 * `limits.agentResponseBytes`, 16 MiB, less 1 MiB for the rest of the answer) draws one warning
 * naming the size and the limit; a task under it draws none, and its entries are not serialised
 * to find out.
 */
import { SendMessageRequest, TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultExecutionEventBus,
  RequestContext,
  ServerCallContext,
} from '@a2a-js/sdk/server';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { WorldStateDeltaEntry } from '../protocol/index.js';
import { LIMITS, STAMPS, parseDeltaEntry } from '../protocol/index.js';
import { declareEffectDomain } from './card.js';
import { withEffects } from './effects.js';
import type { SizeCounter } from './effects-size.js';
import {
  DELTAS_WARNING_BYTES,
  deltasBytes,
  entryBytes,
  entryFrameBound,
  snapshot,
} from './effects-size.js';
import type { EffectsWarning, TaskEffects } from './effects-types.js';

const CARD = declareEffectDomain({ skills: [{ id: 'triage' }] }, { triage: ['board'] });

/** Runs one task whose body gets the effects; returns the warnings and what the task kept. */
async function run(body: (effects: TaskEffects) => void) {
  const warnings: EffectsWarning[] = [];
  let kept: readonly WorldStateDeltaEntry[] = [];
  const executor = withEffects(
    {
      execute(ctx, bus, effects) {
        bus.publish(
          AgentEvent.task({
            id: ctx.taskId,
            contextId: ctx.contextId,
            status: {
              state: TaskState.TASK_STATE_WORKING,
              message: undefined,
              timestamp: undefined,
            },
            artifacts: [],
            history: [],
            metadata: undefined,
          }),
        );
        body(effects);
        kept = effects.deltas;
        bus.publish(
          AgentEvent.statusUpdate({
            taskId: ctx.taskId,
            contextId: ctx.contextId,
            status: {
              state: TaskState.TASK_STATE_COMPLETED,
              message: undefined,
              timestamp: undefined,
            },
            metadata: undefined,
          }),
        );
        bus.finished();
        return Promise.resolve();
      },
    },
    { card: CARD, onWarning: (w) => void warnings.push(w) },
  );
  const request = SendMessageRequest.fromJSON({
    message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'go' }] },
    metadata: { [STAMPS.effectDomainSkill]: 'triage' },
  });
  await executor.execute(
    new RequestContext(request, 't1', 'ctx-t1', new ServerCallContext()),
    new DefaultExecutionEventBus(),
  );
  return { warnings, kept };
}

/** A `set` of `value` at `data.n<i>` of the board. */
const entry = (i: number, value: unknown): WorldStateDeltaEntry => ({
  domain: 'board',
  path: `data.n${i}`,
  op: 'set',
  value,
});

/** `count` entries of `unit` repeated, the last one cut so the list is exactly `bytes` as JSON. */
function deltasOf(bytes: number, count: number, unit: string): WorldStateDeltaEntry[] {
  const list = Array.from({ length: count }, (_, i) => entry(i, ''));
  const frame = deltasBytes(list);
  const unitBytes = Buffer.byteLength(JSON.stringify(unit)) - 2;
  const each = Math.floor((bytes - frame) / count / unitBytes);
  for (let i = 0; i < count; i += 1) list[i] = entry(i, unit.repeat(each));
  // The rest in ASCII, so the total comes out exact whatever the unit's width.
  const rest = bytes - deltasBytes(list);
  list[count - 1] = entry(count - 1, unit.repeat(each) + 'x'.repeat(rest));
  expect(deltasBytes(list)).toBe(bytes);
  expect(Buffer.byteLength(JSON.stringify(list))).toBe(bytes);
  return list;
}

afterEach(() => vi.restoreAllMocks());

describe('report() and the size of an answer a gateway reads', () => {
  it('is 15 MiB: the default limits.agentResponseBytes, 16 MiB, less 1 MiB for the rest', () => {
    expect(LIMITS.agentResponseBytes).toBe(16 * 1024 * 1024);
    expect(DELTAS_WARNING_BYTES).toBe(15 * 1024 * 1024);
  });

  it('warns once, naming the size and the limit, when the deltas pass it, reported one by one', async () => {
    const list = deltasOf(DELTAS_WARNING_BYTES + 1, 300, 'a');
    const { warnings, kept } = await run((effects) => {
      for (const delta of list) effects.report(delta);
      // More after the warning: no second one.
      effects.report(entry(300, 'b'.repeat(60_000)));
    });
    expect(kept).toHaveLength(301);
    expect(warnings).toHaveLength(1);
    const [warning] = warnings;
    expect(warning).toMatchObject({ kind: 'effects-too-large', taskId: 't1' });
    // The size when it passed the threshold: the 300 entries, not the one reported after.
    expect(warning!.bytes).toBe(DELTAS_WARNING_BYTES + 1);
    expect(warning!.message).toBe(
      `task t1 reported ${DELTAS_WARNING_BYTES + 1} bytes of deltas as JSON, more than 15728640: ` +
        'the answer that carries them nears or passes what a gateway reads of an answer by ' +
        'default (limits.agentResponseBytes, 16777216 bytes); past it the gateway refuses the ' +
        'answer (FLEETGATE_AGENT_RESPONSE_TOO_LARGE) and the task fails with none of its deltas ' +
        "applied. Report fewer or smaller deltas, or raise the gateway's limits.agentResponseBytes",
    );
  });

  it('says nothing for deltas of exactly the threshold, in one report', async () => {
    const list = deltasOf(DELTAS_WARNING_BYTES, 300, 'a');
    const { warnings } = await run((effects) => effects.report(list));
    expect(warnings).toEqual([]);
  });

  it('counts bytes, not characters: escapes and multi-byte text are measured as sent', async () => {
    // 2 bytes of JSON a character: fewer characters than the threshold, more bytes.
    const escaped = deltasOf(DELTAS_WARNING_BYTES + 1, 300, '\n');
    expect(escaped.reduce((n, d) => n + (d.value as string).length, 0)).toBeLessThan(
      DELTAS_WARNING_BYTES / 2,
    );
    const over = await run((effects) => effects.report(escaped));
    expect(over.warnings.map((w) => [w.kind, w.bytes])).toEqual([
      ['effects-too-large', DELTAS_WARNING_BYTES + 1],
    ]);
    // 3 bytes a character, under the threshold: the bound (6 a character) passes it, the size
    // does not.
    const euros = deltasOf(DELTAS_WARNING_BYTES - 10, 300, '€');
    const under = await run((effects) => effects.report(euros));
    expect(under.warnings).toEqual([]);
  });

  it('adds up the reports of a task', async () => {
    const list = deltasOf(DELTAS_WARNING_BYTES + 100, 300, 'a');
    const { warnings } = await run((effects) => {
      effects.report(list.slice(0, 150));
      effects.report(list.slice(150));
    });
    expect(warnings.map((w) => w.bytes)).toEqual([DELTAS_WARNING_BYTES + 100]);
  });

  it('serialises nothing to size a task that stays well under the threshold', async () => {
    const stringify = vi.spyOn(JSON, 'stringify');
    let calls = -1;
    const { warnings, kept } = await run((effects) => {
      const before = stringify.mock.calls.length;
      for (let i = 0; i < LIMITS.deltasPerTask; i += 1) {
        effects.report(entry(i, { id: i, title: 'a new issue', labels: ['bug', 'p1'] }));
      }
      calls = stringify.mock.calls.length - before;
    });
    expect(kept).toHaveLength(LIMITS.deltasPerTask);
    expect(warnings).toEqual([]);
    expect(calls).toBe(0);
  });
});

describe('the size bound a copy gives', () => {
  it('is never less than the bytes of the copied entry as JSON, and the copy is equal', () => {
    const text = fc.string({ unit: 'binary', maxLength: 40 });
    fc.assert(
      fc.property(
        fc.record({
          domain: fc.string({ minLength: 1, maxLength: 20 }),
          path: fc.array(text, { minLength: 1, maxLength: 3 }).map((s) => s.join('.')),
          op: fc.constantFrom('set', 'push', 'inc'),
          value: fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.double(), text),
        }),
        (candidate) => {
          const verdict = parseDeltaEntry(candidate);
          fc.pre(verdict.ok);
          if (!verdict.ok) return;
          const size: SizeCounter = { bytes: 0 };
          const copy = { ...verdict.entry, value: snapshot(verdict.entry.value, size) };
          expect(copy).toEqual(verdict.entry);
          const bound = size.bytes + entryFrameBound(copy.domain, copy.path);
          expect(bound).toBeGreaterThanOrEqual(entryBytes(copy));
        },
      ),
      { numRuns: 500 },
    );
  });
});
