/** The HTTP API with the session's bearer token; errors keep the gateway's code and details. */

/** An answer other than 2xx, as `{ error: { code, message, details? } }` said it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> | undefined,
  ) {
    super(message);
  }
}

/**
 * The code of an {@link ApiError} for a request that got no answer at all (status 0): the gateway
 * is down, restarting or out of the network's reach. Nothing says whether it acted on the request.
 */
export const UNREACHABLE = 'GATEWAY_UNREACHABLE';

/** Whether `error` says the gateway could not be reached (no answer, not a refusal). */
export function isUnreachable(error: unknown): error is ApiError {
  return error instanceof ApiError && error.code === UNREACHABLE;
}

/** How a failed request reads on a page: the gateway's code and message, or what went wrong. */
export function errorText(error: unknown): string {
  return error instanceof ApiError ? `${error.code}: ${error.message}` : String(error);
}

/** A client bound to one token. */
export interface Api {
  get<T>(path: string): Promise<T>;
  post<T>(path: string, body?: unknown): Promise<T>;
}

/**
 * A client for `token`; `onUnauthorized` hears every 401 (the token is no longer accepted: a
 * restarted gateway with new tokens, a token removed from the configuration).
 */
export function createApi(
  token: string,
  base = '',
  onUnauthorized?: (message: string) => void,
): Api {
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (token !== '') headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      text = await res.text();
    } catch (error) {
      // No answer, or one cut off: the browser says only "Failed to fetch" or the like.
      throw new ApiError(
        0,
        UNREACHABLE,
        `The gateway cannot be reached (${error instanceof Error ? error.message : String(error)}).`,
        undefined,
      );
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      if (res.status === 401) {
        const said = (parsed as { error?: { message?: string } } | undefined)?.error?.message;
        onUnauthorized?.(said ?? res.statusText);
      }
      const error = (
        parsed as
          | { error?: { code?: string; message?: string; details?: Record<string, unknown> } }
          | undefined
      )?.error;
      throw new ApiError(
        res.status,
        error?.code ?? `HTTP_${res.status}`,
        error?.message ?? res.statusText,
        error?.details,
      );
    }
    return parsed as T;
  };
  return {
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body ?? {}),
  };
}
