/**
 * A bare forwarder in its own process: each request's method, path, headers and body go to the
 * target origin over a kept-alive connection, and its answer comes back as it is — no parsing, no
 * record, no policy. Whatever sits between a caller and an agent costs at least this much, so a
 * service benchmark measures it beside the gateway: the forwarder's ratios are the ceiling of any
 * process in the path on the machine the benchmark runs on.
 *
 * `startForwarderProcess(target)` starts `node forwarder.ts --forward TARGET` and resolves with the
 * forwarder's URL; it lives until `stop()`.
 */
import { spawn } from 'node:child_process';
import {
  Agent,
  createServer,
  request,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** Headers of one hop only (RFC 9110 §7.6.1): never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
]);

function forwardable(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!HOP_BY_HOP.has(name) && value !== undefined) out[name] = value;
  }
  return out;
}

function serve(target: URL): void {
  const pool = new Agent({ keepAlive: true });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers = forwardable(req.headers);
      headers.host = target.host;
      headers['content-length'] = body.length;
      const out = request(
        {
          host: target.hostname,
          port: target.port,
          path: req.url,
          method: req.method,
          headers,
          agent: pool,
        },
        (answer) => {
          const got: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => got.push(chunk));
          answer.on('end', () => {
            const bytes = Buffer.concat(got);
            const back = forwardable(answer.headers);
            back['content-length'] = bytes.length;
            res.writeHead(answer.statusCode ?? 502, back);
            res.end(bytes);
          });
        },
      );
      out.on('error', (error) => {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`forwarder: ${error.message}`);
      });
      out.end(body);
    });
  });
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
  });
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
}

/** Starts a forwarder to `target` (an origin) in its own process. */
export async function startForwarderProcess(
  target: string,
): Promise<{ url: string; pid: number; stop: () => void }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(import.meta.url), '--forward', target],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`forwarder exited with ${code}`)));
    lines.once('line', (line) => resolve((JSON.parse(line) as { url: string }).url));
  });
  return { url, pid: child.pid!, stop: () => child.stdin.end() };
}

const at = process.argv.indexOf('--forward');
if (at !== -1 && process.argv[1] === fileURLToPath(import.meta.url)) {
  serve(new URL(process.argv[at + 1]!));
}
