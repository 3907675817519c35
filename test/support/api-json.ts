import { api } from './gateway-service.js';

/**
 * `GET` (or `POST` with `body`) against a running service with a bearer token; the JSON answer.
 * Throws with the status and body on anything but 2xx, so a failed call fails the test where it
 * happened.
 */
export async function getJson<T>(
  base: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<T> {
  const answer = await api<T>(base, path, { token, ...(body === undefined ? {} : { body }) });
  if (answer.status < 200 || answer.status > 299) {
    throw new Error(`${path}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
  }
  return answer.body;
}
