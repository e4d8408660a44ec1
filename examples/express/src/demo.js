// The demo: starts the example API on a free port, fires a burst of requests at the device
// API with one appKey, prints each answer and a summary, then exits.
//   pnpm --filter @floodgate/example-express demo      (BURST=20 for a bigger burst)
import { createApp } from './app.js';
import { createStore } from './store.js';

const burst = Number(process.env.BURST ?? 15);
const { store, close, description } = createStore();
const appKey = `demo-${Date.now()}`;
// The demo issues itself a fresh app key, so every run starts with a full budget.
const server = createApp({ store, appKeys: new Set([appKey]) }).listen(0, '127.0.0.1');
await new Promise((resolve, reject) => {
  server.once('listening', resolve);
  server.once('error', reject);
});
const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
const url = `http://127.0.0.1:${port}/devices`;

console.log(
  `Floodgate demo: ${burst} requests at GET ${url} with X-App-Key ${appKey} (${description})`,
);
let allowed = 0;
let denied = 0;
let policy;
for (let i = 1; i <= burst; i++) {
  const res = await fetch(url, { headers: { 'x-app-key': appKey } });
  await res.arrayBuffer();
  policy ??= res.headers.get('ratelimit-policy');
  if (res.status === 429) denied++;
  else if (res.ok) allowed++;
  const retry = res.headers.get('retry-after');
  console.log(
    `#${String(i).padStart(2, '0')} ${res.status}  RateLimit: ${res.headers.get('ratelimit')}${retry ? `  Retry-After: ${retry}` : ''}`,
  );
}
console.log(`RateLimit-Policy: ${policy}`);
console.log(`${allowed} allowed, ${denied} denied (429) out of ${burst}`);

server.close();
server.closeAllConnections();
await close();
// The device API admits a burst of 10: a bigger burst that is never denied means something broke.
process.exitCode = allowed > 0 && (denied > 0 || burst <= 10) ? 0 : 1;
