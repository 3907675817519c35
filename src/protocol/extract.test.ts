import { readFileSync } from 'node:fs';
import { Task as TaskCodec } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import { threeArtifactTask, wireFixtures } from '../../test/fixtures/wire-fixtures.js';
import type { WorldStateDeltaEntry } from './index.js';
import {
  COST_MIME,
  createCostPart,
  createWorldStateDeltaPart,
  extractCost,
  extractWorldStateDeltas,
  LIMITS,
  readStreamEvent,
  WORLDSTATE_DELTA_MIME,
} from './index.js';

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../../test/fixtures/${name}`, import.meta.url), 'utf8'));

const ALL_ENTRIES: WorldStateDeltaEntry[] = [
  { domain: 'ci', path: 'data.blockedPRs', op: 'inc', value: -1 },
  { domain: 'ci', path: 'data.lastRun', op: 'set', value: { id: 42, ok: true } },
  { domain: 'board', path: 'data.untriaged', op: 'inc', value: -1 },
  { domain: 'board', path: 'data.log', op: 'push', value: 'triaged #7' },
];

function taskWith(parts: unknown[]): unknown {
  return {
    id: 't',
    status: { state: 'TASK_STATE_COMPLETED' },
    artifacts: [{ artifactId: 'a', parts }],
  };
}

describe('extractWorldStateDeltas', () => {
  it('reads every delta part of every artifact, in order, and skips parts of another MIME', () => {
    for (const task of [
      threeArtifactTask(),
      fixture('wire/task-three-artifacts.v1.json'),
      fixture('wire/task-three-artifacts.v03.json'),
    ]) {
      const result = extractWorldStateDeltas(task);
      expect(result.entries).toEqual(ALL_ENTRIES);
      expect(result.parts).toBe(2);
      expect(result.rejected).toEqual([]);
      expect(result.warnings).toEqual([]);
    }
  });

  it('keeps the v1.0 wire fixtures equal to what the SDK serialises today', () => {
    for (const [name, json] of Object.entries(wireFixtures())) {
      expect(fixture(`wire/${name}`), name).toEqual(JSON.parse(JSON.stringify(json)));
    }
  });

  it('round-trips an emitted delta part through SDK toJSON and fromJSON', () => {
    const deltas: WorldStateDeltaEntry[] = [
      { domain: 'd', path: 'a.b', op: 'push', value: [1, 'x'] },
    ];
    const sdkTask = {
      ...threeArtifactTask(),
      artifacts: [
        { ...threeArtifactTask().artifacts[0]!, parts: [createWorldStateDeltaPart(deltas)] },
      ],
    };
    const wire = TaskCodec.toJSON(sdkTask);
    expect(extractWorldStateDeltas(wire).entries).toEqual(deltas);
    expect(extractWorldStateDeltas(TaskCodec.fromJSON(wire as never)).entries).toEqual(deltas);
    const v03 = taskWith([
      { kind: 'data', data: { deltas }, metadata: { mimeType: WORLDSTATE_DELTA_MIME } },
    ]);
    expect(extractWorldStateDeltas(v03).entries).toEqual(deltas);
  });

  it('reads a part that carries the MIME only in mediaType, with a warning naming the convention', () => {
    const result = extractWorldStateDeltas(
      taskWith([{ data: { deltas: [ALL_ENTRIES[0]] }, mediaType: WORLDSTATE_DELTA_MIME }]),
    );
    expect(result.entries).toEqual([ALL_ENTRIES[0]]);
    expect(result.warnings).toHaveLength(1);
    expect(result.warnings[0]).toContain('metadata.mimeType');
    expect(result.warnings[0]).toContain('artifacts[0].parts[0]');
  });

  it('never reads a data part without the delta MIME as deltas', () => {
    const result = extractWorldStateDeltas(
      taskWith([
        { data: { deltas: [ALL_ENTRIES[0]] } },
        { kind: 'data', data: { deltas: [ALL_ENTRIES[0]] } },
        { data: { deltas: [ALL_ENTRIES[0]] }, metadata: { mimeType: 'application/json' } },
      ]),
    );
    expect(result).toEqual({ entries: [], rejected: [], parts: 0, warnings: [] });
  });

  it('rejects each broken entry with its reason and keeps the valid siblings', () => {
    const corpus = fixture('broken-deltas/entries.json') as {
      cases: { name: string; entry: unknown; reasonIncludes: string }[];
    };
    const good = ALL_ENTRIES[0]!;
    for (const c of corpus.cases) {
      const result = extractWorldStateDeltas(
        taskWith([
          {
            data: { deltas: [good, c.entry, good] },
            metadata: { mimeType: WORLDSTATE_DELTA_MIME },
          },
        ]),
      );
      expect(result.entries, c.name).toEqual([good, good]);
      expect(result.rejected, c.name).toHaveLength(1);
      expect(result.rejected[0]!.index, c.name).toBe(1);
      expect(result.rejected[0]!.entry, c.name).toEqual(c.entry);
      expect(result.rejected[0]!.reason, c.name).toContain(c.reasonIncludes);
      expect(result.rejected[0]!.location).toBe('artifacts[0].parts[0].data.deltas[1]');
    }
  });

  it('rejects an oversized value and keeps its siblings', () => {
    const big = {
      domain: 'ci',
      path: 'data.blob',
      op: 'set',
      value: 'x'.repeat(LIMITS.deltaValueBytes + 1),
    };
    const result = extractWorldStateDeltas(
      taskWith([
        { data: { deltas: [big, ALL_ENTRIES[0]] }, metadata: { mimeType: WORLDSTATE_DELTA_MIME } },
      ]),
    );
    expect(result.entries).toEqual([ALL_ENTRIES[0]]);
    expect(result.rejected[0]!.reason).toMatch(/value is \d+ bytes as JSON, more than the limit/);
  });

  it('rejects entries past the per-task limit, counting across parts', () => {
    const half = Array.from({ length: LIMITS.deltasPerTask / 2 + 1 }, (_, i) => ({
      domain: 'ci',
      path: `data.n${i}`,
      op: 'set',
      value: i,
    }));
    const part = { data: { deltas: half }, metadata: { mimeType: WORLDSTATE_DELTA_MIME } };
    const result = extractWorldStateDeltas(taskWith([part, part]));
    expect(result.entries).toHaveLength(LIMITS.deltasPerTask);
    // The run past the limit is one rejection, naming how many entries were not read.
    expect(result.rejected).toEqual([
      {
        index: LIMITS.deltasPerTask,
        entry: { $summary: 'entries', count: 2 },
        reason: `too many entries: a task may report at most ${LIMITS.deltasPerTask}; 2 entries from here on were not read`,
        location: `artifacts[0].parts[1].data.deltas[${LIMITS.deltasPerTask / 2 - 1}]`,
      },
    ]);
  });

  it('keeps a rejection small: a huge entry is summarised, a million extra entries are one record', () => {
    const huge = { domain: 'ci', path: 'data.big', op: 'set', value: 'x'.repeat(1 << 20) };
    const many = Array.from({ length: 1_000_000 }, () => ({ op: 'inc' }));
    const result = extractWorldStateDeltas(
      taskWith([
        { data: { deltas: [huge] }, metadata: { mimeType: WORLDSTATE_DELTA_MIME } },
        { data: { deltas: many }, metadata: { mimeType: WORLDSTATE_DELTA_MIME } },
      ]),
    );
    expect(result.rejected[0]!.entry).toEqual({
      $summary: 'entry',
      bytes: JSON.stringify(huge).length,
      domain: 'ci',
      path: 'data.big',
      op: 'set',
    });
    expect(result.rejected).toHaveLength(1 + LIMITS.deltasPerTask);
    expect(result.rejected.at(-1)!.entry).toEqual({
      $summary: 'entries',
      count: 1_000_000 - (LIMITS.deltasPerTask - 1),
    });
    expect(JSON.stringify(result.rejected).length).toBeLessThan(LIMITS.eventBytes);
  });

  it('rejects a delta part whose payload has no deltas array, and reads the next part', () => {
    const result = extractWorldStateDeltas(
      fixture('broken-deltas/part-without-deltas-array.v1.json'),
    );
    expect(result.entries).toEqual([{ domain: 'ci', path: 'data.ok', op: 'set', value: true }]);
    expect(result.rejected).toHaveLength(1);
    expect(result.rejected[0]!.reason).toContain('"deltas" array');
    expect(result.rejected[0]!.location).toBe('artifacts[0].parts[0].data');
  });
});

describe('extractCost', () => {
  it('reads the cost part in every shape and round-trips the emit helper', () => {
    const expected = {
      usage: { input_tokens: 120, output_tokens: 30 },
      costUsd: 0.0021,
      success: true,
    };
    for (const task of [
      threeArtifactTask(),
      fixture('wire/task-three-artifacts.v1.json'),
      fixture('wire/task-three-artifacts.v03.json'),
    ]) {
      expect(extractCost(task)).toEqual({ payload: expected, problems: [] });
    }
    const part = createCostPart({ durationMs: 12, success: false });
    expect(part.metadata).toEqual({ mimeType: COST_MIME });
  });

  it('reports an invalid cost part with its location', () => {
    const result = extractCost(
      taskWith([{ data: { costUsd: -1 }, metadata: { mimeType: COST_MIME } }]),
    );
    expect(result.payload).toBeUndefined();
    expect(result.problems[0]).toContain('artifacts[0].parts[0].data: costUsd');
  });
});

describe('readStreamEvent', () => {
  it('decodes v1.0 StreamResponse wrappers and v0.3 events to the same events', () => {
    const v1 = readStreamEvent(fixture('wire/stream-artifact.v1.json'));
    const v03 = readStreamEvent(fixture('wire/stream-artifact.v03.json'));
    expect(v1).toEqual(v03);
    expect(v1.type).toBe('artifactUpdate');
    const s1 = readStreamEvent(fixture('wire/stream-status-working.v1.json'));
    const s03 = readStreamEvent(fixture('wire/stream-status-working.v03.json'));
    expect(s1).toEqual(s03);
    expect(s1).toMatchObject({ type: 'statusUpdate', taskId: 'task-3a', state: 'working' });
    const t = readStreamEvent(fixture('wire/stream-task.v1.json'));
    expect(t.type === 'task' && t.task.state).toBe('completed');
  });

  it('names what is missing in a bad event', () => {
    expect(() => readStreamEvent({ statusUpdate: { status: {} } })).toThrow(/taskId/);
    expect(() => readStreamEvent({ hello: 1 })).toThrow(/none of task, message/);
    expect(() => readStreamEvent({ kind: 'weird' })).toThrow(/unknown stream event kind "weird"/);
  });
});
