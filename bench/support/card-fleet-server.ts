/**
 * A separate process serving the cards of N agents at `/agents/<i>/.well-known/agent-card.json`,
 * with ETags (an unchanged card costs a 304). Prints its port on stdout when listening.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BLAST_RADII, BLAST_V1_URI, HITL_MODE_V1_URI } from '../../src/protocol/index.js';

const count = Number(process.argv[2] ?? 1000);
const cards: { text: string; etag: string }[] = [];
for (let i = 0; i < count; i += 1) {
  const skills = ['triage', 'review', 'deploy'];
  const card = {
    name: `agent-${i}`,
    description: 'benchmark agent',
    version: '1.0.0',
    capabilities: {
      extensions: [
        {
          uri: BLAST_V1_URI,
          params: {
            skills: Object.fromEntries(
              skills.map((s, k) => [s, { radius: BLAST_RADII[(i + k) % 5] }]),
            ),
          },
        },
        { uri: HITL_MODE_V1_URI, params: { skills: { deploy: { mode: 'gated' } } } },
      ],
    },
    skills: skills.map((id) => ({ id, name: id, description: id, tags: [] })),
  };
  const text = JSON.stringify(card);
  cards.push({ text, etag: `"card-${i}-${text.length}"` });
}

const server = createServer((req, res) => {
  const match = /^\/agents\/(\d+)\/\.well-known\/agent-card\.json$/.exec(req.url ?? '');
  const card = match === null ? undefined : cards[Number(match[1])];
  if (card === undefined) {
    res.writeHead(404).end();
    return;
  }
  if (req.headers['if-none-match'] === card.etag) {
    res.writeHead(304, { etag: card.etag }).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json', etag: card.etag }).end(card.text);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
process.on('disconnect', () => process.exit(0));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
