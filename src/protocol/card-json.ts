import { FleetgateError } from './errors.js';
import { LIMITS } from './limits.js';

/**
 * Parses an agent card document, enforcing the size limit before parsing.
 *
 * @param source where the text came from (a path or URL), named in errors.
 * @throws FleetgateError `FLEETGATE_CARD_TOO_LARGE` or `FLEETGATE_CARD_INVALID`.
 */
export function parseCardJson(text: string, source: string): unknown {
  // A UTF-16 unit is at most 3 bytes of UTF-8: a text that short is within the limit without
  // counting its bytes (a scan of the whole text, as long as parsing it).
  const bytes = text.length * 3 <= LIMITS.cardBytes ? 0 : Buffer.byteLength(text, 'utf8');
  if (bytes > LIMITS.cardBytes) {
    throw new FleetgateError(
      'FLEETGATE_CARD_TOO_LARGE',
      `${source}: the card is ${bytes} bytes, more than the limit of ${LIMITS.cardBytes}`,
      { details: { source, bytes, limit: LIMITS.cardBytes } },
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new FleetgateError(
      'FLEETGATE_CARD_INVALID',
      `${source}: not valid JSON (${error instanceof Error ? error.message : String(error)})`,
      { cause: error, details: { source } },
    );
  }
}
