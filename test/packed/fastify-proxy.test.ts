/**
 * The packed @floodgate/fastify on the Fastify npm installs today, probed as an attacker would:
 * a client at 127.0.0.2 that forges X-Forwarded-For, and clients behind a proxy at 127.0.0.1,
 * against a limit of 2 with the `trustProxy` settings users write. Each setting runs in a
 * process of its own (FLOODGATE_UNTRUSTED_PROXY is reported once per process), through a real
 * listener; the warnings are read from Node's 'warning' events.
 */
import { type PackedInstall, type PackedProject, packedInstall } from '../harness/packed';

let install: PackedInstall;
let project: PackedProject;

beforeAll(() => {
  install = packedInstall();
  project = install.project('fastify-proxy');
}, 300_000);

afterAll(() => project?.remove());

/** [from, X-Forwarded-For] of each request. */
type Requests = readonly (readonly [string, string])[];

const FORGED: Requests = [1, 2, 3, 4, 5, 6].map((i) => ['127.0.0.2', `203.0.113.${i}`] as const);
const PROXIED: Requests = [
  ['127.0.0.1', '198.51.100.1'],
  ['127.0.0.1', '198.51.100.1'],
  ['127.0.0.1', '198.51.100.2'],
  ['127.0.0.1', '198.51.100.2'],
];

let probes = 0;

function run(trustProxy: string, requests: Requests): { statuses: number[]; codes: string[] } {
  const file = `probe-${++probes}.cjs`;
  project.write(
    file,
    `const http = require('node:http');
const Fastify = require('fastify');
const { rateLimit } = require('@floodgate/fastify');
const { fixedWindow, memoryStore } = require('@floodgate/core');
const codes = [];
process.on('warning', (w) => { if (String(w.code).startsWith('FLOODGATE_')) codes.push(w.code); });
const get = (port, from, forwardedFor) => new Promise((resolve, reject) => {
  const req = http.request(
    { host: '127.0.0.1', port, path: '/', localAddress: from, headers: { 'x-forwarded-for': forwardedFor } },
    (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); },
  );
  req.on('error', reject);
  req.end();
});
(async () => {
  const app = Fastify({ trustProxy: ${trustProxy} });
  await app.register(rateLimit, {
    store: memoryStore({ clock: () => 1700000010000 }),
    policies: fixedWindow({ limit: 2, window: '1m' }),
  });
  app.get('/', async () => 'ok');
  await app.listen({ port: 0, host: '127.0.0.1' });
  const statuses = [];
  for (const [from, forwardedFor] of ${JSON.stringify(requests)}) {
    statuses.push(await get(app.server.address().port, from, forwardedFor));
  }
  await app.close();
  await new Promise((resolve) => setImmediate(resolve));
  console.log(JSON.stringify({ statuses, codes }));
})();
`,
  );
  return JSON.parse(project.run(file)) as { statuses: number[]; codes: string[] };
}

test('trustProxy: true — forged addresses pass, and FLOODGATE_PROXY_HOPS says so', () => {
  expect(run('true', FORGED)).toEqual({
    statuses: [200, 200, 200, 200, 200, 200],
    codes: ['FLOODGATE_PROXY_HOPS'],
  });
});

test("trustProxy: '127.0.0.1' — a forged X-Forwarded-For from elsewhere is ignored", () => {
  // The forged header from a peer that is not the proxy is reported (once per process).
  expect(run("'127.0.0.1'", FORGED)).toEqual({
    statuses: [200, 200, 429, 429, 429, 429],
    codes: ['FLOODGATE_UNTRUSTED_PROXY'],
  });
});

test("trustProxy: '127.0.0.1' — clients behind the proxy have a budget each, silently", () => {
  expect(run("'127.0.0.1'", PROXIED)).toEqual({ statuses: [200, 200, 200, 200], codes: [] });
});

test('trustProxy: 1 on Fastify 5.12+ — one budget for everyone behind the proxy, reported', () => {
  expect(run('1', PROXIED)).toEqual({
    statuses: [200, 200, 429, 429],
    codes: ['FLOODGATE_UNTRUSTED_PROXY'],
  });
});
