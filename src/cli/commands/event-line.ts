/**
 * One bus event as one human line (`fleetgate tail`, and `tail --url` over a gateway's live
 * feed): coloured by topic family, an alert's severity and radius in the house colours.
 */
import pc from 'picocolors';
import type { Severity } from '../../alerts/index.js';
import { ALERT_SEVERITIES } from '../../alerts/index.js';
import type { EventEnvelope } from '../../protocol/index.js';
import { isBlastRadius } from '../../protocol/index.js';
import { createStyle } from '../style.js';

/** Longest payload summary printed on one line. */
const SUMMARY_WIDTH = 160;

type Paint = (text: string) => string;

/** Colour of each topic family (first token); anything else is printed plain. */
function familyPaint(family: string, color: boolean): Paint {
  const c = pc.createColors(color);
  switch (family) {
    case 'world':
      return c.green;
    case 'fleet':
      return c.cyan;
    case 'skill':
      return c.blue;
    case 'hitl':
      return c.magenta;
    case 'ops':
      return (t) => c.bold(c.red(t));
    case 'cost':
      return c.yellow;
    case 'system':
      return (t) => c.bold(c.red(t));
    default:
      return (t) => t;
  }
}

/** An alert's severity, coloured by weight; empty for other events. */
function severityTag(payload: unknown, color: boolean): string {
  if (typeof payload !== 'object' || payload === null || !('severity' in payload)) return '';
  const severity = payload.severity;
  if (!(ALERT_SEVERITIES as readonly unknown[]).includes(severity)) return '';
  const c = pc.createColors(color);
  const paint: Record<Severity, Paint> = {
    info: c.dim,
    warning: c.yellow,
    error: c.red,
    critical: (t) => c.bold(c.red(t)),
  };
  return ` ${paint[severity as Severity](`[${String(severity)}]`)}`;
}

/**
 * What an alert says, whole: its message names the agent and skill, what happened and what to do,
 * and is what an operator reads — cut to the payload's first characters it would end before the
 * message (`--json` prints every field). Undefined for a payload without a message.
 */
function alertMessage(payload: unknown): string | undefined {
  if (typeof payload !== 'object' || payload === null || !('message' in payload)) return undefined;
  return typeof payload.message === 'string' && payload.message.length > 0
    ? payload.message
    : undefined;
}

function summarise(payload: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(payload) ?? String(payload);
  } catch {
    text = String(payload);
  }
  return text.length > SUMMARY_WIDTH ? `${text.slice(0, SUMMARY_WIDTH - 1)}…` : text;
}

/**
 * The end of an event id, enough to tell the events of one stream apart: a generated id
 * (`<uuid>-<counter>`) without its counter's zero padding, so the line keeps the uuid's tail.
 */
function shortId(id: string): string {
  return id.replace(/-0+(?=[0-9a-z]+$)/u, '-').slice(-12);
}

/**
 * One human line for an event: time, topic (coloured by family), the end of its id
 * ({@link shortId}: generated ids share their prefix within a process), the correlation id when it
 * differs from the event id, and the payload.
 * An `ops.alert.*` line shows its severity (`[critical]`), the radius in the radius colours
 * used by every table (`unknown` when the skill declared none or its card is stale) and the
 * alert's message whole instead of the payload.
 */
export function formatEventLine(event: EventEnvelope, color: boolean): string {
  const s = createStyle(color);
  const family = event.topic.split('.', 1)[0] ?? '';
  const time = event.time.length >= 23 ? event.time.slice(11, 23) : event.time;
  const alert = event.topic.startsWith('ops.alert.');
  const given =
    typeof event.payload === 'object' && event.payload !== null && 'radius' in event.payload
      ? event.payload.radius
      : undefined;
  const radius = isBlastRadius(given)
    ? ` ${s.radius(given)}`
    : alert && given === 'unknown'
      ? ` ${s.dim('unknown')}`
      : '';
  const correlation =
    event.correlationId === event.id ? '' : s.dim(` ⇠${event.correlationId.slice(-12)}`);
  const severity = family === 'ops' ? severityTag(event.payload, color) : '';
  const summary = (alert ? alertMessage(event.payload) : undefined) ?? summarise(event.payload);
  return `${s.dim(time)} ${familyPaint(family, color)(event.topic)}${severity}${radius} ${s.dim(shortId(event.id))}${correlation} ${summary}`;
}
