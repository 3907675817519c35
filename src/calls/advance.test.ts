import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import type { TaskStateName } from '../protocol/index.js';
import { TASK_STATES } from '../protocol/index.js';
import {
  advance,
  ENDED_STATUSES,
  type CallEffect,
  type CallEvent,
  type CallState,
} from './advance.js';

const FRESH: CallState = {
  status: 'running',
  decided: false,
  taskId: null,
  result: null,
  sent: null,
  updatedAt: 0,
};
const SENT: CallState = { ...FRESH, decided: true, sent: { messageId: 'm', contextId: 'c' } };
/** A sent call someone asked to cancel (the cancel on its way to the agent). */
const CANCEL_ASKED: CallState = advance(SENT, {
  type: 'cancel-requested',
  at: 2,
  by: 'olive',
  reason: 'wrong week',
}).call;

/** Drops the keys fast-check left undefined (optional properties are absent, not undefined). */
const defined = <T extends object>(value: T): T =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;

const END_TOPICS = new Set([
  'skill.dispatch.completed',
  'skill.dispatch.failed',
  'skill.dispatch.rejected',
]);
const ends = (effects: readonly CallEffect[]): number =>
  effects.filter((e) => e.type === 'announce' && END_TOPICS.has(e.topic)).length;

/** Runs `events` from `call`, every effect kept. */
function run(call: CallState, events: readonly CallEvent[]) {
  const effects: CallEffect[] = [];
  const statuses = [call.status];
  let now = call;
  for (const event of events) {
    const next = advance(now, event);
    effects.push(...next.effects);
    now = next.call;
    statuses.push(now.status);
  }
  return { call: now, effects, statuses };
}

const state = fc.constantFrom<TaskStateName>(...TASK_STATES);
const terminalState = fc.constantFrom<TaskStateName>('completed', 'failed', 'canceled', 'rejected');
const text = fc.option(fc.constantFrom('done', 'ok', 'no', ''), { nil: undefined });
const taskId = fc.constantFrom('t1', 't2');

/** Any event a source may report, at any time, repeated or late. */
const event: fc.Arbitrary<CallEvent> = fc
  .oneof<fc.Arbitrary<Record<string, unknown>>[]>(
    fc.record({
      type: fc.constant('gated' as const),
      at: fc.nat(),
      action: fc.constantFrom('hold' as const, 'deny' as const),
      reason: fc.constant('policy'),
      goAt: fc.option(fc.nat(), { nil: undefined }),
    }),
    fc.record({ type: fc.constant('released' as const), at: fc.nat() }),
    fc.record({
      type: fc.constant('sending' as const),
      at: fc.nat(),
      messageId: fc.constant('m'),
      contextId: fc.constant('c'),
      announce: fc.boolean(),
    }),
    fc.record({ type: fc.constant('task-named' as const), at: fc.nat(), taskId }),
    fc.record({
      type: fc.constant('send-failed' as const),
      at: fc.nat(),
      error: fc.constant({ code: 'FLEETGATE_CALL_FAILED', message: 'refused' }),
    }),
    fc.record({
      type: fc.constant('answered' as const),
      at: fc.nat(),
      state: fc.oneof(state, fc.constant('message' as const)),
      taskId: fc.option(taskId, { nil: undefined }),
      text,
      continued: fc.boolean(),
    }),
    fc.record({ type: fc.constant('task-state' as const), at: fc.nat(), state }),
    fc.record({
      type: fc.constant('settled' as const),
      at: fc.nat(),
      taskId,
      state: terminalState,
      text,
      timedOut: fc.boolean(),
      forgottenBy: fc.option(fc.constant('ops'), { nil: undefined }),
    }),
    fc.record({ type: fc.constant('question-answered' as const), at: fc.nat() }),
    fc.record({
      type: fc.constant('cancel-requested' as const),
      at: fc.nat(),
      by: fc.option(fc.constant('olive'), { nil: undefined }),
      reason: fc.option(fc.constant('wrong week'), { nil: undefined }),
    }),
    fc.record({
      type: fc.constant('denied' as const),
      at: fc.nat(),
      reason: fc.constant('rejected by alice'),
      code: fc.constant('FLEETGATE_APPROVAL_REJECTED'),
    }),
    fc.record({
      type: fc.constant('unroutable' as const),
      at: fc.nat(),
      error: fc.constant({ code: 'FLEETGATE_AGENT_UNKNOWN', message: 'no gateway knows it' }),
    }),
    fc.record({
      type: fc.constant('recovered' as const),
      at: fc.nat(),
      found: fc.oneof(
        fc.constant({ kind: 'never-sent' as const, message: 'nothing left' }),
        fc.constant({ kind: 'not-found' as const, message: 'no such task' }),
        fc.record({ kind: fc.constant('found' as const), taskId, state }),
      ),
    }),
  )
  .map((e) => defined(e) as unknown as CallEvent);

describe('advance: properties over random interleavings and duplicates', () => {
  it('nothing leaves an ended call, and a late event there has no effects', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 30 }), (events) => {
        let now: CallState = FRESH;
        for (const e of events) {
          const next = advance(now, e);
          if (ENDED_STATUSES.has(now.status)) {
            expect(next.call).toBe(now);
            expect(next.effects).toEqual([]);
            expect(next.moved).toBe(false);
          }
          now = next.call;
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('a call ends at most once, and an ended call was announced exactly once', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 30 }), (events) => {
        const { call, effects, statuses } = run(FRESH, events);
        expect(ends(effects)).toBeLessThanOrEqual(1);
        expect(ends(effects)).toBe(ENDED_STATUSES.has(call.status) ? 1 : 0);
        // Once ended, every later status is the same.
        const first = statuses.findIndex((s) => ENDED_STATUSES.has(s));
        if (first >= 0) expect(new Set(statuses.slice(first))).toEqual(new Set([call.status]));
      }),
      { numRuns: 2000 },
    );
  });

  it('a held call is sent at most once however often it is released', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 30 }), (events) => {
        const held = advance(FRESH, { type: 'gated', at: 1, action: 'hold', reason: 'r' }).call;
        const releases = events.filter((e) => e.type !== 'question-answered');
        const { effects } = run(held, releases);
        expect(effects.filter((e) => e.type === 'send').length).toBeLessThanOrEqual(1);
      }),
      { numRuns: 1000 },
    );
  });

  it('one task end seen by several paths, with duplicates and progress, gives the same end in any order', () => {
    const observations = fc
      .record({ state: terminalState, text, taskId })
      .chain(({ state: end, text: said, taskId: id }) =>
        fc.tuple(
          fc.constant({ end, said, id }),
          fc.array(
            fc.oneof(
              fc.constant(
                defined({
                  type: 'settled',
                  at: 5,
                  taskId: id,
                  state: end,
                  text: said,
                }) as CallEvent,
              ),
              fc.constant(
                defined({
                  type: 'answered',
                  at: 5,
                  taskId: id,
                  state: end,
                  text: said,
                }) as CallEvent,
              ),
              fc.record({ type: fc.constant('task-state' as const), at: fc.nat(), state }),
            ),
            { minLength: 1, maxLength: 12 },
          ),
        ),
      )
      .filter(([, seen]) => seen.some((e) => e.type !== 'task-state'));
    // From a call sent, or one someone asked to cancel meanwhile.
    const from = fc.constantFrom(SENT, CANCEL_ASKED);
    fc.assert(
      fc.property(observations, fc.infiniteStream(fc.nat()), from, (observed, seeds, start) => {
        const [{ end, said, id }, seen] = observed;
        const shuffled = [...seen];
        for (let i = shuffled.length - 1; i > 0; i--) {
          const j = seeds.next().value! % (i + 1);
          [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
        }
        const a = run(start, seen).call;
        const b = run(start, shuffled).call;
        expect({ status: b.status, result: b.result, taskId: b.taskId }).toEqual({
          status: a.status,
          result: a.result,
          taskId: a.taskId,
        });
        expect(ENDED_STATUSES.has(a.status)).toBe(true);
        expect(a.taskId).toBe(id);
        expect(a.result?.state).toBe(end);
        expect(a.result?.text).toBe(said === '' ? undefined : said);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('advance: the moves of one call', () => {
  it('keeps the task a stream named before its answer, silently, and its end as ever', () => {
    const named = advance(SENT, { type: 'task-named', at: 2, taskId: 't1' });
    expect(named).toMatchObject({
      moved: true,
      effects: [],
      call: { status: 'running', taskId: 't1' },
    });
    // Named once: a later naming, or one of a call not on its way to an answer, changes nothing.
    expect(advance(named.call, { type: 'task-named', at: 3, taskId: 't2' }).moved).toBe(false);
    const held = advance(FRESH, { type: 'gated', at: 1, action: 'hold', reason: 'r' }).call;
    expect(advance(held, { type: 'task-named', at: 2, taskId: 't1' }).moved).toBe(false);
    // The stream's end follows or ends the call as a blocking answer would.
    const done = advance(named.call, { type: 'answered', at: 4, taskId: 't1', state: 'completed' });
    expect(done.call).toMatchObject({ status: 'completed', taskId: 't1' });
    expect(done.effects).toEqual([{ type: 'announce', topic: 'skill.dispatch.completed' }]);
    const goesOn = advance(named.call, { type: 'answered', at: 4, taskId: 't1', state: 'working' });
    expect(goesOn.effects).toEqual([{ type: 'follow', taskId: 't1', state: 'working' }]);
  });

  it('keeps who asked to cancel a call, and why, as its error once its task ends canceled', () => {
    expect(CANCEL_ASKED.status).toBe('running');
    expect(CANCEL_ASKED.result).toEqual({
      error: { code: 'FLEETGATE_DISPATCH_CANCELED', message: 'Canceled by olive: wrong week' },
    });
    const asked = advance(SENT, { type: 'cancel-requested', at: 2, by: 'olive', reason: 'x' });
    expect(asked.moved).toBe(true);
    expect(asked.effects).toEqual([
      { type: 'announce', topic: 'skill.dispatch.cancel-requested', reason: 'x' },
    ]);
    expect(advance(SENT, { type: 'cancel-requested', at: 2 }).call.result?.error?.message).toBe(
      'Canceled by its caller.',
    );
    // Asked once: a second request (another door, a retry) changes nothing.
    expect(advance(CANCEL_ASKED, { type: 'cancel-requested', at: 3, by: 'bob' }).moved).toBe(false);
    // Only a call at the agent: a held one is rejected instead, an ended one stays as it is.
    const held = advance(FRESH, { type: 'gated', at: 1, action: 'hold', reason: 'r' }).call;
    expect(advance(held, { type: 'cancel-requested', at: 2, by: 'olive' }).moved).toBe(false);

    for (const seen of [
      { type: 'settled', at: 5, taskId: 't1', state: 'canceled', text: 'stopped' },
      { type: 'answered', at: 5, taskId: 't1', state: 'canceled', text: 'stopped' },
    ] as const) {
      const ended = advance(CANCEL_ASKED, seen);
      expect(ended.call.status).toBe('canceled');
      expect(ended.call.result).toEqual({
        state: 'canceled',
        text: 'stopped',
        error: { code: 'FLEETGATE_DISPATCH_CANCELED', message: 'Canceled by olive: wrong week' },
      });
      expect(ended.effects).toEqual([{ type: 'announce', topic: 'skill.dispatch.failed' }]);
    }
    // The agent finished first: the call ends as the agent said, no cancel in its result.
    const finished = advance(CANCEL_ASKED, {
      type: 'settled',
      at: 5,
      taskId: 't1',
      state: 'completed',
      text: 'done',
    });
    expect(finished.call.result).toEqual({ state: 'completed', text: 'done' });
    // Canceled without anyone asking here (at the agent itself): the task's own end.
    expect(
      advance(SENT, { type: 'settled', at: 5, taskId: 't1', state: 'canceled' }).call.result?.error
        ?.code,
    ).toBe('FLEETGATE_TASK_FAILED');
  });

  it('a gated call waits for approval; a veto window schedules its release', () => {
    const held = advance(FRESH, { type: 'gated', at: 1, action: 'hold', reason: 'r', goAt: 60 });
    expect(held.call).toMatchObject({ status: 'awaiting-approval', updatedAt: 1 });
    expect(held.effects).toEqual([
      { type: 'announce', topic: 'skill.dispatch.gated', reason: 'r' },
      { type: 'release-at', at: 60 },
    ]);
    // Nothing but a release moves it to the agent.
    expect(advance(held.call, { type: 'answered', at: 2, state: 'completed' }).moved).toBe(false);
    const released = advance(held.call, { type: 'released', at: 3 });
    expect(released.call).toMatchObject({ status: 'running', result: null });
    expect(released.effects).toEqual([
      { type: 'announce', topic: 'skill.dispatch.started' },
      { type: 'send' },
    ]);
    expect(advance(released.call, { type: 'released', at: 4 }).moved).toBe(false);
  });

  it('a held call no running gateway can send ends failed, never sent', () => {
    const held = advance(FRESH, { type: 'gated', at: 1, action: 'hold', reason: 'r' }).call;
    const error = { code: 'FLEETGATE_AGENT_UNKNOWN', message: 'no gateway knows agent ops' };
    const failed = advance(held, { type: 'unroutable', at: 2, error });
    expect(failed.call).toMatchObject({ status: 'failed', result: { error } });
    expect(failed.effects).toEqual([{ type: 'announce', topic: 'skill.dispatch.failed' }]);
    expect(advance(failed.call, { type: 'released', at: 3 }).moved).toBe(false);
  });

  it('a denied call ends rejected with the gate code', () => {
    const denied = advance(FRESH, {
      type: 'gated',
      at: 1,
      action: 'deny',
      reason: 'cooldown',
      code: 'FLEETGATE_DISPATCH_COOLDOWN',
    });
    expect(denied.call).toMatchObject({
      status: 'rejected',
      result: { error: { code: 'FLEETGATE_DISPATCH_COOLDOWN', message: 'cooldown' } },
    });
  });

  it('a question is followed, asked of a human once, and answered on the same task', () => {
    const asked = advance(SENT, {
      type: 'answered',
      at: 2,
      state: 'input-required',
      taskId: 't1',
      text: 'which branch?',
    });
    expect(asked.call).toMatchObject({ status: 'awaiting-input', taskId: 't1' });
    expect(asked.effects).toEqual([
      { type: 'announce', topic: 'skill.dispatch.awaiting-input', state: 'input-required' },
      { type: 'follow', taskId: 't1', state: 'input-required' },
      { type: 'checkpoint', taskId: 't1', question: 'which branch?' },
    ]);
    // The tracker seeing the same question says nothing new.
    expect(advance(asked.call, { type: 'task-state', at: 3, state: 'input-required' }).moved).toBe(
      false,
    );
    const answered = advance(asked.call, { type: 'question-answered', at: 4 });
    expect(answered.call.status).toBe('running');
    expect(answered.effects).toEqual([{ type: 'send' }]);
  });

  it('recovery: never sent is interrupted, not found is outcome unknown, found is followed', () => {
    const interrupted = advance(FRESH, {
      type: 'recovered',
      at: 9,
      found: { kind: 'never-sent', message: 'gone' },
    });
    expect(interrupted.call.result?.error?.code).toBe('FLEETGATE_CALL_INTERRUPTED');
    const unknown = advance(SENT, {
      type: 'recovered',
      at: 9,
      found: { kind: 'not-found', message: 'no task' },
    });
    expect(unknown.call).toMatchObject({
      status: 'failed',
      result: { error: { code: 'FLEETGATE_CALL_OUTCOME_UNKNOWN' } },
    });
    const found = advance(SENT, {
      type: 'recovered',
      at: 9,
      found: { kind: 'found', taskId: 't1', state: 'completed' },
    });
    expect(found.call).toMatchObject({ status: 'running', taskId: 't1' });
    expect(found.effects).toEqual([{ type: 'follow', taskId: 't1', state: 'completed' }]);
  });

  it('a task given up by tracking ends failed FLEETGATE_TASK_TIMEOUT', () => {
    const timedOut = advance(SENT, {
      type: 'settled',
      at: 9,
      taskId: 't1',
      state: 'canceled',
      timedOut: true,
    });
    expect(timedOut.call).toMatchObject({
      status: 'failed',
      result: { state: 'canceled', error: { code: 'FLEETGATE_TASK_TIMEOUT' } },
    });
    expect(timedOut.effects).toEqual([{ type: 'announce', topic: 'skill.dispatch.failed' }]);
  });

  it('a task its agent forgot ends failed FLEETGATE_CALL_OUTCOME_UNKNOWN, and a late end changes nothing', () => {
    const followed = advance(SENT, { type: 'answered', at: 1, state: 'working', taskId: 't1' });
    const forgotten = advance(followed.call, {
      type: 'settled',
      at: 9,
      taskId: 't1',
      state: 'failed',
      forgottenBy: 'ops',
    });
    expect(forgotten.call).toMatchObject({ status: 'failed', taskId: 't1' });
    expect(forgotten.call.result).toEqual({
      error: {
        code: 'FLEETGATE_CALL_OUTCOME_UNKNOWN',
        message: expect.stringMatching(
          /^Agent ops no longer knows task t1 .*whether the call ran is unknown\. Check at the agent before sending it again\.$/,
        ),
      },
    });
    expect(forgotten.effects).toEqual([{ type: 'announce', topic: 'skill.dispatch.failed' }]);
    // The agent shows the task after all (a late push): the call has ended and stays so.
    for (const late of [
      { type: 'settled', at: 10, taskId: 't1', state: 'completed', text: 'done' },
      { type: 'answered', at: 10, taskId: 't1', state: 'completed' },
      { type: 'task-state', at: 10, state: 'working' },
    ] as const) {
      expect(advance(forgotten.call, late)).toEqual({
        call: forgotten.call,
        effects: [],
        moved: false,
      });
    }
  });
});
